import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';

/**
 * Debian's Chromium driven by playwright-core (`npx playwright install` cannot work here: nothing is
 * downloaded from outside the npm registry and Debian). `.ci/run` installs the `chromium` package
 * when it is missing; without it the browser tests say they were skipped, as PostgreSQL's do.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const chromiumAvailable = (): boolean => existsSync(CHROMIUM);

/** Flags for a sandboxed machine with a closed network: no background connections, no GPU, no QUIC. */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * A fresh headless Chromium with a new, empty profile (user data dir), removed on close. Its clock
 * is in São Paulo (UTC−3): a page that shows or reads local time where it says UTC is caught.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'rewards-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 860 }, timezoneId: BROWSER_TIME_ZONE });
  return {
    context,
    newPage: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The zone of the test browser's clock; never UTC, so that UTC shown as UTC is a real check. */
const BROWSER_TIME_ZONE = 'America/Sao_Paulo';

/**
 * What sticks out past the right edge of a phone's screen (390 CSS pixels): the page's width if it
 * scrolls sideways, with the outermost elements that overflow. Empty when nothing does.
 */
export async function sidewaysOverflow(page: Page, width = 390): Promise<string[]> {
  const before = page.viewportSize();
  await page.setViewportSize({ width, height: 844 });
  try {
    return await page.evaluate((limit) => {
      const wide = document.documentElement.scrollWidth;
      if (wide <= limit) return [];
      const culprits = [...document.querySelectorAll('body *')].filter(
        (el) => el.getBoundingClientRect().right > limit + 0.5 && !(el.parentElement && el.parentElement.getBoundingClientRect().right > limit + 0.5),
      );
      return [
        `page is ${wide} px wide`,
        ...culprits
          .slice(0, 8)
          .map(
            (el) =>
              `${el.tagName.toLowerCase()}${el.getAttribute('data-testid') ? `[data-testid=${el.getAttribute('data-testid')}]` : ''}${el.className ? `.${String(el.className).replace(/ /g, '.')}` : ''} ends at ${Math.round(el.getBoundingClientRect().right)} px`,
          ),
      ];
    }, width);
  } finally {
    if (before) await page.setViewportSize(before);
  }
}

/** Serious and critical accessibility violations on the page as it is now (axe-core's WCAG 2 A/AA rules). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}
