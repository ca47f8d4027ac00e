// needs: database, chromium
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { CONSOLE_BUILD_SCRIPT, CONSOLE_DIST_DIR } from '../../src/console-build.js';
import { startWorker } from '../../src/worker/start-worker.js';
import type { JobWorker } from '../../src/worker/job-worker.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { CHROMIUM, chromiumAvailable, launchBrowser, seriousAccessibilityViolations, sidewaysOverflow, type TestBrowser } from '../support/browser.js';
import { testDialects } from '../support/databases.js';
import { tenantWithExperience } from '../support/experiences.js';
import { eventually } from '../support/notifications.js';
import { insertNotifications, newNotificationRow } from '../../src/storage/repositories/notifications.js';
import { gate, startHttpReceiver, type Receiver } from '../support/receivers.js';
import { waitForStatus } from '../support/requests.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core), against the
 * real service, worker and receivers: the ways in and out, each page's main actions, the request
 * timeline, escaping of what comes from outside, a strict CSP that the console never trips, and
 * axe on every page. The SQLite run takes a screenshot of each page (docs/console/ with
 * UPDATE_SCREENSHOTS=1: `UPDATE_SCREENSHOTS=1 TEST_DATABASES=sqlite npm test -- console.browser`).
 */
const SKIP = chromiumAvailable() ? false : `no Chromium at ${CHROMIUM} (apt-get install -y chromium; .ci/run does)`;
/** Screenshots go to docs/console/ with UPDATE_SCREENSHOTS=1 (so a test run leaves the tree as it was), else to a temporary folder. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/console', import.meta.url)) : join(tmpdir(), 'rewards-console-screenshots');
/** What a receiver answers and a description holds to try the console's escaping. */
const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';

for (const dialect of testDialects()) {
  describe(`web console in Chromium [${dialect}]`, { skip: SKIP }, () => {
    let t: TestApp;
    let worker: JobWorker;
    let browser: TestBrowser;
    let pki: TestPki;
    let as: AuthorizationServer;
    const receivers: Receiver[] = [];
    const cspViolations: string[] = [];

    before(async () => {
      if (!existsSync(join(CONSOLE_DIST_DIR, 'index.html'))) {
        const build = spawnSync(process.execPath, [CONSOLE_BUILD_SCRIPT], { encoding: 'utf8' });
        assert.equal(build.status, 0, `npm run build:console failed: ${build.stdout}${build.stderr}`);
      }
      pki = await testPki();
      const files = writePkiFiles(pki);
      // CALLBACK_TIMEOUT: a receiver held open by a test must not time out while the browser looks.
      t = await startTestApp(dialect, {
        RETRY_INTERVAL: '100ms',
        RETRY_MAX_ATTEMPTS: '2',
        CALLBACK_TIMEOUT: '60s',
        MTLS_CERT_FILE: files.certFile,
        MTLS_KEY_FILE: files.keyFile,
        MTLS_CA_FILE: files.caFile,
      });
      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      as = await startAuthorizationServer({ accessTokenTtlSeconds: 300 });
      browser = await launchBrowser();
      mkdirSync(SCREENSHOTS, { recursive: true });
    });
    after(async () => {
      await browser?.close();
      await worker?.stop();
      for (const receiver of receivers) await receiver.close();
      await as?.close();
      await t?.close();
      assert.deepEqual(cspViolations, [], 'the console never trips its own Content-Security-Policy');
    });

    const receiver = async (...args: Parameters<typeof startHttpReceiver>) => {
      const r = await startHttpReceiver(...args);
      receivers.push(r);
      return r;
    };

    /** A fresh page that records CSP violations and page errors. */
    const open = async (path = '/console/'): Promise<Page> => {
      const page = await browser.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      page.on('pageerror', (error) => cspViolations.push(`page error: ${error.message}`));
      // Confirmations (rotate, delete, deactivate) are accepted, as the user would.
      page.on('dialog', (dialog) => void dialog.accept());
      await page.goto(`${t.url}${path}`);
      return page;
    };

    const signIn = async (page: Page, client: ClientCredentials) => {
      await page.getByTestId('client-id').fill(client.clientId);
      await page.getByTestId('client-secret').fill(client.clientSecret);
      await page.getByTestId('sign-in').click();
      await page.getByTestId('sign-out').waitFor();
    };

    /** The page has no serious or critical axe violation at 1280 px nor on a phone, and does not scroll sideways on one; on SQLite its screenshot is kept. */
    const checkPage = async (page: Page, name: string) => {
      await page.waitForLoadState('networkidle');
      assert.deepEqual(await seriousAccessibilityViolations(page), [], `axe on ${name}`);
      assert.deepEqual(await sidewaysOverflow(page), [], `${name} at 390 px`);
      const wide = page.viewportSize();
      await page.setViewportSize({ width: 390, height: 844 });
      try {
        assert.deepEqual(await seriousAccessibilityViolations(page), [], `axe on ${name} at 390 px`);
      } finally {
        if (wide) await page.setViewportSize(wide);
      }
      if (dialect === 'sqlite') await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
    };

    /** Opens a list page's "Filters" disclosure (closed on arrival unless a filter is applied). */
    const openFilters = async (page: Page, testid: string) => {
      if ((await page.getByTestId(`${testid}-box`).getAttribute('open')) === null) await page.getByTestId(`${testid}-toggle`).click();
      await page.getByTestId(testid).waitFor();
    };

    /** A client account with the `summer` experience and a full-scope token. */
    const tenant = () =>
      tenantWithExperience(t, {
        title: 'Summer campaign',
        prizes: [
          { id: 'cpn-10', bucket: 'coupons', value: 10, quantity: 1, kind: 'coupon', stock: 50 },
          { id: 'tv', bucket: 'tv', value: 0, quantity: 1, kind: 'physical', stock: 0 },
        ],
      });

    it('signs in with a client id and secret, shows the overview with each subscription, signs out and forgets the token', async () => {
      const { client, token } = await tenant();
      const ok = await receiver();
      await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', description: 'Orders', callback: { url: `${ok.url}/hook` } } });
      const page = await open();
      await checkPage(page, 'sign-in');
      assert.equal(await page.title(), 'Sign in · Rewards console');
      // A wrong secret is said in words, not in OAuth codes.
      await page.getByTestId('client-id').fill(client.clientId);
      await page.getByTestId('client-secret').fill(`${client.clientSecret}x`);
      await page.getByTestId('sign-in').click();
      await page.getByTestId('problem').waitFor();
      const refusal = (await page.getByTestId('problem').textContent()) ?? '';
      assert.match(refusal, /Sign-in refused/);
      assert.doesNotMatch(refusal, /invalid_client/);
      await signIn(page, client);
      await page.getByTestId('health-card').first().waitFor();
      assert.equal(await page.title(), 'Overview · Rewards console', 'the tab names the page');
      assert.equal(await page.getByTestId('health-card').count(), 1);
      await checkPage(page, 'overview');
      // Focus starts at the top: Tab reaches the skip link, then the menu; after a move within the console too.
      const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim());
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'Skip to content');
      await page.getByTestId('nav-subscriptions').click();
      await page.getByRole('heading', { name: 'Subscriptions', level: 1 }).waitFor();
      assert.equal(await focused(), 'Subscriptions · Rewards console', "the page's name has focus, read out on arrival");
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'Skip to content');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.closest('header, nav') !== null), true, 'then the header and the menu');
      await page.getByTestId('subscription-row').first().waitFor();
      await checkPage(page, 'subscriptions');
      // The tab's icon is the console's own, served with its type.
      const icon = await page.evaluate(() => document.querySelector<HTMLLinkElement>('link[rel=icon]')?.href ?? '');
      const iconAnswer = await fetch(icon);
      assert.equal(iconAnswer.status, 200, icon);
      assert.equal(iconAnswer.headers.get('content-type'), 'image/svg+xml');
      assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
      await page.getByTestId('sign-out').click();
      await page.getByTestId('sign-in-form').waitFor();
      assert.equal(await page.evaluate(() => Object.keys(sessionStorage).some((key) => /token|session/i.test(key) && sessionStorage.getItem(key)?.includes('ey'))), false);
      await page.reload();
      await page.getByTestId('sign-in-form').waitFor();
      await page.close();
    });

    it('a client holding some scopes only signs in with Scopes left empty, in one token request that succeeds, and is offered the pages they open', async () => {
      const client = await t.createClientAccount(undefined, ['subscriptions:read', 'requests:read']);
      const page = await open();
      const tokenRequests: string[] = [];
      const refused: string[] = [];
      page.on('request', (request) => {
        if (request.url().includes('/oauth/token')) tokenRequests.push(new URL(request.url()).pathname);
      });
      page.on('response', (response) => {
        if (response.status() >= 400) refused.push(`${response.status()} ${new URL(response.url()).pathname}`);
      });
      await signIn(page, client);
      await page.getByTestId('nav-requests').waitFor();
      assert.deepEqual(refused, [], 'no request refused on the way');
      assert.equal(tokenRequests.length, 1, `one token request: ${tokenRequests.join(', ')}`);
      const offered = await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
      assert.deepEqual(offered, ['Overview', 'Subscriptions', 'Deliveries', 'Requests']);
      // A page this session may not use still says which page it is, and why.
      await page.goto(`${t.url}/console/subscriptions/new`);
      await page.getByTestId('read-only').waitFor();
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'New subscription');
      assert.equal(await page.title(), 'New subscription · Rewards console');
      await page.close();
    });

    it('creates a subscription with each authorization method through the form', async () => {
      const { client, token } = await tenant();
      const ok = await receiver();
      const page = await open('/console/subscriptions/new');
      await signIn(page, client);
      const oauth2 = { url: as.tokenUrl, client_id: as.clientId, client_secret: as.clientSecret, audience: as.audience };
      const methods: Array<[string, (page: Page) => Promise<void>, (auth: any) => void]> = [
        [
          'Bearer',
          async (p) => {
            // A credential is typed as dots; Show reveals it, Hide masks it again.
            const bearer = p.getByTestId('sub-bearer');
            await bearer.fill('tok-123');
            assert.equal(await bearer.getAttribute('type'), 'password');
            await p.getByTestId('sub-bearer-show').click();
            assert.equal(await bearer.getAttribute('type'), 'text');
            assert.equal(await p.getByTestId('sub-bearer-show').getAttribute('aria-pressed'), 'true');
            await p.getByTestId('sub-bearer-show').click();
            assert.equal(await bearer.getAttribute('type'), 'password');
          },
          (auth) => assert.match(auth.Bearer, /^\*+/),
        ],
        [
          'Basic',
          async (p) => {
            await p.getByTestId('sub-basic-user').fill('user');
            await p.getByTestId('sub-basic-password').fill('pass');
          },
          (auth) => assert.ok(auth.Basic),
        ],
        [
          'oauth2',
          async (p) => {
            await p.getByTestId('sub-oauth-url').fill(oauth2.url);
            await p.getByTestId('sub-oauth-client-id').fill(oauth2.client_id);
            await p.getByTestId('sub-oauth-client-secret').fill(oauth2.client_secret);
            await p.getByTestId('sub-oauth-audience').fill(oauth2.audience);
          },
          (auth) => assert.deepEqual([auth.oauth2.client_id, auth.oauth2.audience], [oauth2.client_id, oauth2.audience]),
        ],
        ['mtls', async () => {}, (auth) => assert.deepEqual(auth, { mtls: {} })],
        [
          'mtls-oauth2',
          async (p) => {
            await p.getByTestId('sub-oauth-url').fill(oauth2.url);
            await p.getByTestId('sub-oauth-client-id').fill(oauth2.client_id);
            await p.getByTestId('sub-oauth-client-secret').fill(oauth2.client_secret);
          },
          (auth) => assert.equal(auth.mtls.twoFactor.oauth2.client_id, oauth2.client_id),
        ],
      ];
      for (const [method, fill, check] of methods) {
        await page.goto(`${t.url}/console/subscriptions/new`);
        await page.getByTestId('sub-url').fill(`${ok.url}/${method}`);
        await page.getByTestId('sub-description').fill(`via ${method}`);
        await page.getByTestId('sub-auth-type').selectOption(method);
        await fill(page);
        if (method === 'Bearer') await checkPage(page, 'subscription-new');
        await page.getByTestId('sub-save').click();
        await page.getByTestId('open-created').waitFor();
        const list = (await api(t.url, 'GET', '/v2/subscriptions', { token })).body as any[];
        const created = list.find((s) => s.description === `via ${method}`);
        assert.ok(created, `${method}: created`);
        check(created.callback.authorization);
      }
      // A field the API refuses shows the problem next to the field it names.
      await page.goto(`${t.url}/console/subscriptions/new`);
      await page.getByTestId('sub-url').fill('http://user:secret@hooks.example.com/x');
      await page.getByTestId('sub-save').click();
      await page.getByTestId('field-error').first().waitFor();
      // Fixing the value takes the message and the red border away at once, before any submit.
      const url = page.getByTestId('sub-url');
      assert.equal(await url.getAttribute('aria-invalid'), 'true');
      await url.fill('https://hooks.example.com/x');
      await page.getByTestId('field-error').first().waitFor({ state: 'detached' });
      assert.equal(await url.getAttribute('aria-invalid'), null);

      // The event choice offers the operational events, explained; they take no experiences.
      await page.goto(`${t.url}/console/subscriptions/new`);
      const events = await page
        .getByTestId('sub-event')
        .locator('option')
        .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
      assert.deepEqual(events, ['registered-request', 'processed-request', 'failed-notification', 'disabled-subscription', 'endpoint-circuit']);
      assert.equal(await page.getByTestId('sub-event-operational').count(), 0);
      await page.getByTestId('sub-event').selectOption('failed-notification');
      await page.getByTestId('sub-event-operational').waitFor();
      assert.equal(await page.getByTestId('sub-experiences').count(), 0);
      await page.getByTestId('sub-url').fill(`${ok.url}/operational`);
      await page.getByTestId('sub-description').fill('operational');
      await page.getByTestId('sub-save').click();
      await page.getByTestId('open-created').waitFor();
      const operational = ((await api(t.url, 'GET', '/v2/subscriptions', { token })).body as any[]).find((s) => s.description === 'operational');
      assert.deepEqual([operational?.event, operational?.experiences], ['failed-notification', []]);
      await page.close();
    });

    it('sends a test to a real receiver and shows the outcome in place; reveals the signing secret on demand; rotates it after asking, with the overlap chosen', async () => {
      const { client, token } = await tenant();
      const ok = await receiver();
      const created = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-requests', description: 'Processed', callback: { url: `${ok.url}/p` } } })).body;
      const page = await open(`/console/subscriptions/${created._id}`);
      await signIn(page, client);
      await page.getByTestId('subscription-page').waitFor();
      await page.getByTestId('send-test').click();
      await page
        .getByTestId('test-result')
        .getByText(/succeeded|delivered/i)
        .waitFor({ timeout: 15_000 });
      const call = await eventually(() => ok.requests.find((r) => r.headers['x-webhook-test'] === 'true'), 5_000, 'the test send');
      assert.equal(call.headers['x-webhook-event'], 'processed-requests');
      const secretOf = async () => (await api(t.url, 'GET', `/v2/subscriptions/${created._id}/secret`, { token })).body;
      const first = await secretOf();
      await page.getByTestId('reveal-secret').click();
      await page.getByTestId('signing-secret').getByText(first.secret).waitFor();
      await page.getByTestId('hide-secret').click();
      assert.equal(await page.getByTestId('signing-secret').count(), 0, 'hidden again');
      assert.ok(((await page.getByTestId('secret-shared').textContent()) ?? '').includes(`${ok.url}/p`), 'says the secret is the URL’s');
      // Rotation asks first; "Cancel" changes nothing.
      await page.getByTestId('rotate-overlap').selectOption('1h');
      await page.getByTestId('rotate-secret').click();
      await page.getByRole('button', { name: 'Cancel' }).click();
      assert.equal((await secretOf()).secret, first.secret, 'not rotated without a yes');
      await page.getByTestId('rotate-secret').click();
      await page.getByTestId('rotate-secret-confirm').click();
      await page.getByTestId('previous-secret-until').waitFor();
      const second = await secretOf();
      assert.notEqual(second.secret, first.secret);
      assert.ok(((await page.getByTestId('signing-secret').textContent()) ?? '').includes(second.secret), 'the new secret is shown');
      const overlapMs = Date.parse(second.previousSecretExpiresAt) - Date.parse(second.createdAt);
      assert.ok(Math.abs(overlapMs - 3_600_000) < 5_000, `the old secret signs for the hour chosen (${overlapMs} ms)`);
      // The time is shown in UTC although the browser's clock is in São Paulo.
      assert.ok(((await page.getByTestId('previous-secret-until').textContent()) ?? '').includes(`${second.previousSecretExpiresAt.slice(0, 19).replace('T', ' ')} UTC`));
      await checkPage(page, 'subscription');
      await page.getByTestId('rotate-overlap').selectOption('0m');
      await page.getByTestId('rotate-secret').click();
      await page.getByTestId('rotate-secret-confirm').click();
      await page.getByTestId('previous-secret-until').getByText('no longer signs').waitFor();
      assert.equal((await secretOf()).previousSecretExpiresAt, undefined, 'rotated with no overlap: one secret signs');
      await page.close();
    });

    it('a failing receiver: the delivery shows every attempt and the answer as text; Retry then succeeds; Recover takes the others', async () => {
      const { client, token } = await tenant();
      const flaky = await receiver(() => ({ status: 500, body: HOSTILE }));
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', description: HOSTILE, callback: { url: `${flaky.url}/r` } } })).body;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } })).body.id);
      const failed = await eventually(
        async () => {
          const log = (await api(t.url, 'GET', `/v2/notifications?subscriptionId=${sub._id}`, { token })).body.data as any[];
          return log.length === 3 && log.every((n) => n.status === 'failed') && log;
        },
        20_000,
        'three failed notifications',
      ).catch(async (error: Error) => {
        // Where each stood: its schedule, its lease, its attempts (a CI run once timed out here).
        const rows = await t.deps.db
          .selectFrom('notifications')
          .select(['id', 'status', 'attempt_count', 'run_at', 'lease', 'lease_until', 'runs', 'last_error'])
          .where('subscription_id', '=', sub._id)
          .execute();
        const attempts = await t.deps.db
          .selectFrom('notification_attempts')
          .select(['notification_id', 'attempt', 'started_at', 'latency_ms', 'status_code', 'error'])
          .where('notification_id', 'in', rows.length ? rows.map((row) => row.id) : ['-'])
          .execute();
        throw new Error(`${error.message} at ${Date.now()}; notifications ${JSON.stringify(rows)}; attempts ${JSON.stringify(attempts)}; receiver calls ${flaky.requests.length}`);
      });

      const page = await open(`/console/deliveries?subscriptionId=${sub._id}&status=failed`);
      await signIn(page, client);
      await page.getByTestId('delivery-row').first().waitFor();
      assert.equal(await page.getByTestId('delivery-row').count(), 3);
      await checkPage(page, 'deliveries-filtered');
      await page.goto(`${t.url}/console/deliveries/${failed[0].id}`);
      await page.getByTestId('attempt').first().waitFor();
      assert.equal(await page.getByTestId('attempt').count(), 2);
      assert.ok(((await page.getByTestId('response-body').first().textContent()) ?? '').includes(HOSTILE), 'the answer is shown as text');
      assert.equal(await page.evaluate(() => (window as any).__pwned), undefined, 'nothing from the receiver ran');
      // The headers each attempt sent, as recorded: the first attempt's timestamp, its signature masked.
      const firstCall = flaky.requests.find((r) => r.headers['webhook-id'] === failed[0].id)!;
      await page.getByTestId('attempt-headers').first().locator('summary').click();
      const shown = (await page.getByTestId('attempt-headers').first().textContent()) ?? '';
      assert.ok(shown.includes(String(firstCall.headers['webhook-timestamp'])), "the first attempt's own webhook-timestamp");
      assert.match(shown, /v1,\*\*\*\*/);
      assert.ok(!shown.includes(String(firstCall.headers['webhook-signature']).split(' ')[0]!.slice(3)), 'the signature is masked');
      // A 500 without Retry-After, and a delivery that failed: no wait to show, no attempt to come.
      assert.equal(await page.getByTestId('retry-after').count(), 0);
      assert.equal((await page.getByTestId('next-attempt').textContent())?.trim(), 'none: failed');
      await checkPage(page, 'delivery');

      flaky.respond(() => ({ status: 204 }));
      await page.getByTestId('retry').click();
      // The outcome shows in place, without a reload: the third attempt and the new status.
      await page.getByTestId('attempt').nth(2).waitFor({ timeout: 15_000 });
      await page.getByTestId('delivery-page').locator('.title-row').getByText('succeeded').waitFor();
      await page.getByTestId('retry-waiting').waitFor({ state: 'detached' });
      assert.equal((await api(t.url, 'GET', `/v2/notifications/${failed[0].id}`, { token })).body.status, 'succeeded');

      // The subscription's description is shown as text too.
      await page.goto(`${t.url}/console/subscriptions/${sub._id}`);
      await page.getByTestId('subscription-title').waitFor();
      assert.equal(await page.getByTestId('subscription-title').textContent(), HOSTILE);
      assert.equal(await page.evaluate(() => (window as any).__pwned), undefined);

      // The form reads UTC (the browser's clock is three hours behind it): an hour ago, in UTC.
      await page.getByTestId('recover-since').fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16));
      await page.getByTestId('recover').click();
      await page.getByTestId('recovered').getByText(/2/).waitFor();
      for (const id of [failed[1].id, failed[2].id]) {
        await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${id}`, { token })).body.status === 'succeeded', 15_000, `recovered ${id}`);
      }

      // Everything was delivered in the end: the overview says so, and each figure opens exactly what it counts.
      await page.goto(`${t.url}/console/`);
      const card = page.locator(`[data-testid=health-card][data-subscription-id="${sub._id}"]`);
      await card.getByTestId('failed').waitFor();
      assert.equal((await card.getByTestId('failed').textContent())?.trim(), '0', 'no notification is failed now');
      assert.equal((await card.getByTestId('pending').textContent())?.trim(), '0');
      assert.match((await card.getByTestId('success-rate').textContent()) ?? '', /of 9/, 'the rate says it counts attempts: 2 × 3 failed, then 3 that succeeded');
      assert.equal(await card.getByTestId('health-chart').getAttribute('data-buckets'), '24', '24 hours in hours');
      // Labelled axes: the busiest bucket's count, the slowest p50, the time (UTC) at the start, middle and end; a dot per bucket with a latency.
      const ticks = await card.getByTestId('time-tick').allTextContents();
      assert.equal(ticks.length, 3);
      for (const at of ticks) assert.match(at, /^\d\d:\d\d$/);
      assert.match((await card.getByTestId('y-max').textContent()) ?? '', /^\d+$/);
      assert.match((await card.getByTestId('latency-max').textContent()) ?? '', / ms$/);
      assert.ok((await card.getByTestId('latency-point').count()) >= 1, 'the latency is drawn');
      await checkPage(page, 'overview');
      await card.getByTestId('failed').getByRole('link').click();
      await page.getByTestId('no-deliveries').waitFor();
      await page.goto(`${t.url}/console/?window=1h`);
      await card.getByTestId('health-chart').waitFor();
      assert.equal(await card.getByTestId('health-chart').getAttribute('data-buckets'), '12', 'an hour in five minutes');
      assert.equal(await page.getByTestId('stats-window').inputValue(), '1h');

      // The delivery log: filtered by endpoint and event, with the endpoint shown, and new deliveries coming in by themselves.
      await page.goto(`${t.url}/console/deliveries`);
      await page.getByTestId('delivery-row').first().waitFor();
      assert.ok(((await page.getByTestId('delivery-table').textContent()) ?? '').includes(`${flaky.url}/r`), 'the endpoint column');
      await openFilters(page, 'delivery-filters');
      await page.getByTestId('filter-subscription').selectOption(sub._id);
      await page.getByTestId('filter-event').selectOption('processed-requests');
      await page.getByTestId('apply-filters').click();
      await page.getByTestId('no-deliveries').waitFor();
      await page.getByTestId('filter-event').selectOption('registered-requests');
      await page.getByTestId('apply-filters').click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row]').length === 3);
      assert.match(page.url(), /subscriptionId=.*event=registered-requests/);
      // Since a minute from now (UTC): none yet.
      await page.getByTestId('filter-since').fill(new Date(Date.now() + 60_000).toISOString().slice(0, 16));
      await page.getByTestId('apply-filters').click();
      await page.getByTestId('no-deliveries').waitFor();
      await page.goto(`${t.url}/console/deliveries?subscriptionId=${sub._id}`);
      await page.getByTestId('refreshing').waitFor();
      // The hint shows as soon as the page follows, before its first load lands: wait for the rows.
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row]').length === 3);
      // The new one is answered 503 with Retry-After: 120, so it waits two minutes for its next attempt.
      flaky.respond(() => ({ status: 503, headers: { 'retry-after': '120' }, body: 'busy' }));
      const busyRequest = (await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } })).body.id;
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row]').length === 4, undefined, { timeout: 15_000 });

      // Its page says what the receiver asked for and when the next attempt is due, as the API has it.
      const waiting = await eventually(
        async () => {
          const [listed] = (await api(t.url, 'GET', `/v2/notifications?requestId=${busyRequest}`, { token })).body.data;
          return listed?.attemptCount === 1 && listed.nextAttemptAt !== null && listed;
        },
        15_000,
        'the notification answered with Retry-After',
      );
      await page.goto(`${t.url}/console/deliveries/${waiting.id}`);
      await page.getByTestId('retry-after').waitFor();
      assert.equal((await page.getByTestId('retry-after').textContent())?.trim(), 'Receiver asked to wait 120 s (Retry-After: 120)');
      assert.equal(await page.getByTestId('next-attempt').locator('time').getAttribute('datetime'), waiting.nextAttemptAt);
      assert.ok(((await page.getByTestId('next-attempt').textContent()) ?? '').includes(`${waiting.nextAttemptAt.slice(0, 19).replace('T', ' ')} UTC`), 'the exact time in UTC');
      await page.close();
    });

    it('the delivery log: one line per row, 15 rows on a laptop screen, listen copies apart and said for what they are; names in the header; a phone sees rows at once', async () => {
      const name = `Lojas Exemplo ${Date.now()}`;
      const client = await t.createClientAccount(name);
      const token = await t.token(client);
      const longUrl = 'http://127.0.0.1:9/registered-requests/a-rather-long-path/that-goes-on-and-on/until-it-cannot-fit';
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', description: 'Orders', callback: { url: longUrl } } })).body;
      // 20 notifications to the subscription and, for each, a copy for a `rewards listen` session: the log as a developer who listened has it.
      const session = 'lsn_01consolelisten0000000000';
      const now = Date.now() - 60_000;
      const rows = [];
      for (let i = 0; i < 20; i++) {
        const request = `req_01console${String(i).padStart(14, '0')}`;
        rows.push(newNotificationRow({ accountId: client.accountId, requestId: request, subscriptionId: sub._id, event: 'registered-requests', url: longUrl, payload: '{}' }, now + i * 10));
        // A copy is never due (docs/delivery.md, "Listen copies"): only its session's CLI takes it.
        const copy = newNotificationRow(
          { accountId: client.accountId, requestId: request, subscriptionId: null, event: 'registered-requests', url: `listen:${session}`, payload: '{}' },
          now + i * 10 + 1,
        );
        rows.push({ ...copy, run_at: null });
      }
      await insertNotifications(t.deps.db, rows);

      const page = await open('/console/deliveries');
      await page.setViewportSize({ width: 1280, height: 800 });
      await signIn(page, client);
      // The header names the account; its id and the client's are in the tooltip and, on a wide screen, beside it.
      assert.equal((await page.getByTestId('who-account').textContent())?.trim(), name);
      const who = (await page.getByTestId('signed-in-as').getAttribute('title')) ?? '';
      assert.ok(who.includes(client.accountId) && who.includes(client.clientId), who);
      assert.ok(await page.getByTestId('signed-in-ids').isVisible());

      // By default the listen copies are left out: 20 rows, each of one line.
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row]').length === 20);
      assert.equal(await page.locator('[data-testid=delivery-row][data-listen]').count(), 0, 'no listen copy among the deliveries');
      const boxes = await page.getByTestId('delivery-row').evaluateAll((trs) => trs.map((tr) => tr.getBoundingClientRect()).map((r) => ({ top: r.top, bottom: r.bottom, height: r.height })));
      for (const box of boxes) assert.ok(box.height < 40, `a row is one line (${box.height} px)`);
      const seen = boxes.filter((box) => box.bottom <= 800).length;
      assert.ok(seen >= 15, `at least 15 rows on a 1280 × 800 screen, not ${seen}`);
      // A long URL is cut with an ellipsis, whole in its tooltip; it does not break mid-word.
      const endpoint = page.getByTestId('delivery-endpoint').first();
      assert.equal(await endpoint.getAttribute('title'), longUrl);
      const cut = await endpoint.evaluate((td) => {
        const style = getComputedStyle(td);
        return { overflow: style.textOverflow, wrap: style.whiteSpace, cut: td.scrollWidth > td.clientWidth };
      });
      assert.deepEqual(cut, { overflow: 'ellipsis', wrap: 'nowrap', cut: true });
      await checkPage(page, 'deliveries');

      // The filter shows them alone, each said to be a copy.
      await openFilters(page, 'delivery-filters');
      await page.getByTestId('filter-listen').selectOption('only');
      await page.getByTestId('apply-filters').click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row][data-listen]').length === 20);
      assert.equal(await page.getByTestId('delivery-row').count(), 20);
      assert.match(page.url(), /listen=only/);
      assert.match((await page.getByTestId('delivery-endpoint').first().textContent()) ?? '', new RegExp(`listen copy.*${session}`));

      // A copy's page says what it is and offers no retry (the API answers 409 to one).
      await page.getByTestId('delivery-row').first().getByRole('link').first().click();
      await page.getByTestId('listen-copy').waitFor();
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Listen copy');
      const said = (await page.getByTestId('listen-copy').textContent()) ?? '';
      assert.match(said, /rewards listen/);
      assert.ok(said.includes(session), said);
      assert.doesNotMatch((await page.getByTestId('delivery-page').textContent()) ?? '', /own callback URL/);
      assert.equal(await page.getByTestId('retry').count(), 0, 'no Retry now');
      assert.match((await page.getByTestId('next-attempt').textContent()) ?? '', /waits for the rewards listen CLI/);
      await checkPage(page, 'delivery-listen-copy');

      // A phone: the header and the menu take little height, and the first row shows without scrolling.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${t.url}/console/deliveries`);
      await page.getByTestId('delivery-row').first().waitFor();
      const chrome = await page.evaluate(() => {
        const header = document.querySelector('header')!.getBoundingClientRect();
        const nav = document.querySelector('nav[aria-label=Console]')!.getBoundingClientRect();
        return Math.max(header.bottom, nav.bottom) - Math.min(header.top, nav.top);
      });
      assert.ok(chrome < 120, `header and menu take ${chrome} px of 844`);
      assert.equal(await page.getByTestId('signed-in-ids').isVisible(), false, 'the ids stay in the tooltip on a phone');
      assert.ok(await page.getByTestId('who-account').isVisible());
      const first = (await page.getByTestId('delivery-row').first().boundingBox())!;
      assert.ok(first.y >= 0 && first.y + first.height <= 844, `the first row is on screen (${first.y}–${first.y + first.height})`);
      assert.equal(await page.evaluate(() => window.scrollY), 0);
      assert.equal(await page.getByTestId('filter-listen').isVisible(), false, 'the filters are folded away');
      await page.getByTestId('nav-requests').click();
      await page.getByRole('heading', { name: 'Requests', level: 1 }).waitFor();
      assert.equal(await page.getByTestId('filter-request-status').isVisible(), false);
      await page.close();
    });

    it('a processed notification held behind its registered one says what it waits for, then goes out after it', async () => {
      const { client, token } = await tenant();
      const registered = gate();
      const hook = await receiver(async (request) => {
        if (request.headers['x-webhook-event'] === 'registered-requests') await registered.wait;
        return { status: 204 };
      });
      for (const event of ['registered-requests', 'processed-requests']) await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${hook.url}/hook` } } });
      const id = (await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } })).body.id as string;
      const held = await eventually(
        async () => {
          const log = (await api(t.url, 'GET', `/v2/notifications?requestId=${id}`, { token })).body.data as any[];
          return log.find((n) => n.event === 'processed-requests' && n.waitingFor) ?? false;
        },
        15_000,
        'the held processed-requests notification',
      );
      const first = (await api(t.url, 'GET', `/v2/notifications?requestId=${id}`, { token })).body.data.find((n: any) => n.event === 'registered-requests');
      assert.equal(held.waitingFor, first.id);

      const page = await open(`/console/deliveries?requestId=${id}`);
      await signIn(page, client);
      await page.getByTestId('held').waitFor();
      assert.equal(await page.getByTestId('held').count(), 1, 'only the processed one is held');
      await page.goto(`${t.url}/console/deliveries/${held.id}`);
      await page.getByTestId('waiting-for').waitFor();
      assert.match((await page.getByTestId('waiting-for').textContent()) ?? '', new RegExp(first.id));
      await checkPage(page, 'delivery-held');
      await page.getByTestId('waiting-for').getByRole('link').click();
      await page.getByTestId('delivery-page').getByRole('code').getByText(first.id).waitFor();

      registered.open();
      await eventually(async () => (await api(t.url, 'GET', `/v2/notifications/${held.id}`, { token })).body.status === 'succeeded', 15_000, 'the processed notification, released');
      assert.deepEqual(
        hook.requests.map((r) => r.headers['x-webhook-event']),
        ['registered-requests', 'processed-requests'],
      );
      await page.close();
    });

    it("an endpoint whose circuit is open: the subscription's page and the overview say since when, the next probe and how many are held; the delivery log and the delivery mark the held ones", async () => {
      const client = await t.createClientAccount();
      const token = await t.token(client);
      const url = 'http://127.0.0.1:9/down';
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', description: 'Down', callback: { url } } })).body;
      // The circuit and its held notifications as the worker leaves them (CIRCUIT_BREAKER_FAILURES is 0 here: the worker opens
      // none, and holds nothing new); the next probe half an hour ahead, so that none goes while the browser looks.
      const now = Date.now();
      const openedAt = now - 120_000;
      const nextProbeAt = now + 30 * 60_000;
      await t.deps.db
        .insertInto('endpoint_circuits')
        .values({
          account_id: client.accountId,
          url,
          state: 'open',
          failures: 5,
          reason: 'HTTP 503',
          opened_at: openedAt,
          closed_at: null,
          next_probe_at: nextProbeAt,
          probe_interval_ms: 60_000,
          probe_id: null,
          probe_until: null,
          probes: 2,
          updated_at: now,
        })
        .execute();
      const held = [0, 1, 2].map((i) => ({
        ...newNotificationRow(
          { accountId: client.accountId, requestId: `req_01circuit${String(i).padStart(15, '0')}`, subscriptionId: sub._id, event: 'registered-requests', url, payload: '{}' },
          openedAt + i * 1000,
        ),
        run_at: null,
        held_at: openedAt + i * 1000 + 500,
      }));
      await insertNotifications(t.deps.db, held);
      const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

      const page = await open(`/console/subscriptions/${sub._id}`);
      await signIn(page, client);
      const circuit = page.getByTestId('circuit');
      await circuit.waitFor();
      assert.equal(await circuit.getAttribute('data-state'), 'open');
      const said = (await circuit.textContent()) ?? '';
      assert.match(said, /Circuit open since .* — 5 failures in a row, last: HTTP 503 — next probe /);
      assert.ok(said.includes(utc(openedAt)), `opened at, in UTC: ${said}`);
      assert.equal(await circuit.getByTestId('circuit-next-probe').locator('time').getAttribute('datetime'), new Date(nextProbeAt).toISOString());
      assert.match((await circuit.getByTestId('circuit-next-probe').textContent()) ?? '', /\(2 probes failed so far\)/);
      assert.equal((await circuit.getByTestId('circuit-held-count').textContent())?.trim(), '3 held');
      await checkPage(page, 'subscription-circuit-open');

      // Sending what it held: the line says how many are left (the answer is changed in flight: the worker would drain them at once).
      await page.route('**/v2/subscriptions/*/stats*', async (route) => {
        const response = await route.fetch();
        const stats = await response.json();
        await route.fulfill({ response, json: { ...stats, circuit: { ...stats.circuit, state: 'draining', openedAt: null, nextProbeAt: null, probes: 0, held: 2 } } });
      });
      await page.reload();
      await page.locator('[data-testid=circuit][data-state=draining]').waitFor();
      assert.match((await page.getByTestId('circuit').textContent()) ?? '', /Circuit closed again — sending what was held \(2 left\)/);
      await page.unroute('**/v2/subscriptions/*/stats*');

      // The overview's card says it too.
      await page.goto(`${t.url}/console/`);
      const card = page.locator(`[data-testid=health-card][data-subscription-id="${sub._id}"]`);
      await card.locator('[data-testid=circuit][data-state=open]').waitFor();

      // The delivery log marks each held one, the reason in its tooltip; its page says since when and why, in place of the next attempt.
      await page.goto(`${t.url}/console/deliveries?subscriptionId=${sub._id}`);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=delivery-row]').length === 3);
      assert.equal(await page.getByTestId('circuit-held').count(), 3);
      const status = page.getByTestId('circuit-held').first().locator('xpath=..');
      assert.match((await status.getAttribute('title')) ?? '', /^pending, held since .* UTC\): the endpoint's circuit breaker is open/);
      await page.goto(`${t.url}/console/deliveries/${held[0]!.id}`);
      const holding = page.getByTestId('held-by-circuit');
      await holding.waitFor();
      const line = (await holding.textContent()) ?? '';
      assert.match(line, /^Held since .* — the endpoint's circuit breaker is open/);
      assert.ok(line.includes(utc(held[0]!.held_at)), line);
      assert.equal(await page.getByTestId('delivery-page').locator('.title-row').getByText('held').count(), 1, 'a Held badge beside the status');
      await checkPage(page, 'delivery-circuit-held');
      await page.close();
    });

    it("shows a processed request's whole story on one timeline, partner event and notifications included", async () => {
      const { client, token } = await tenant();
      const ok = await receiver();
      await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: `${ok.url}/r` } } });
      await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-requests', callback: { url: `${ok.url}/p` } } });
      const id = (await api(t.url, 'POST', '/v2/requests', { token, body: { experience: 'summer', event: 'purchase' } })).body.id as string;
      await waitForStatus(t.url, token, id, ['processed']);
      const partner = await api(t.url, 'POST', `/v2/request/${id}/events`, {
        token,
        body: { name: 'em-rota-de-entrega', refId: 'carrier-42', data: { trackingCode: 'BR123', trackingLink: 'https://track.example.com/BR123' } },
      });
      assert.ok([200, 201].includes(partner.status), JSON.stringify(partner.body));
      await eventually(
        async () => (await api(t.url, 'GET', `/v2/notifications?requestId=${id}`, { token })).body.data.every((n: any) => n.status === 'succeeded') && true,
        15_000,
        'both notifications',
      );

      const page = await open('/console/requests');
      await signIn(page, client);
      // The account's requests, newest first, filtered by status and experience.
      await page.locator(`[data-testid=request-row][data-request-id="${id}"]`).waitFor();
      await checkPage(page, 'requests');
      await openFilters(page, 'request-filters');
      await page.getByTestId('filter-request-status').selectOption('rejected');
      await page.getByTestId('apply-request-filters').click();
      await page.getByTestId('no-requests').waitFor();
      await page.getByTestId('filter-request-status').selectOption('processed');
      await page.getByTestId('filter-experience').fill('summer');
      await page.getByTestId('apply-request-filters').click();
      await page.locator(`[data-testid=request-row][data-request-id="${id}"]`).waitFor();
      assert.equal(await page.getByTestId('request-row').count(), 1);
      await page.getByTestId('request-id').fill(id);
      await page.getByTestId('find-request').click();
      // The parts load on their own (request, events, notifications): wait for each.
      for (const expected of [
        /Registered/,
        /Processed/,
        /em-rota-de-entrega/,
        /registered-requests/,
        /processed-requests/,
        new RegExp(`Attempt 1 of processed-requests to ${new URL(ok.url).host}/p: succeeded`),
      ]) {
        await page.getByTestId('timeline').getByText(expected).first().waitFor();
      }
      assert.ok((await page.getByTestId('timeline-entry').count()) >= 5);
      assert.match(page.url(), new RegExp(`/console/requests/${id}$`), 'the timeline has a URL to share');
      await checkPage(page, 'request-timeline');
      await page.close();
    });

    it('the operator creates an account, a client (secret shown once) and a console link that works once and only once', async () => {
      const page = await open('/console/admin/accounts');
      await signIn(page, t.operator);
      const name = `Shop ${Date.now()}`;
      await page.getByTestId('account-name').fill(name);
      await page.getByTestId('create-account').getByRole('button').click();
      await page.getByTestId('account-row').filter({ hasText: name }).waitFor();
      await checkPage(page, 'accounts');
      await page.getByTestId('account-row').filter({ hasText: name }).getByRole('link').first().click();
      await page.getByTestId('account-page').waitFor();
      assert.equal(await page.getByTestId('scope-admin').count(), 0, 'a client business account is not offered the operator scope');
      await page.getByTestId('create-client').getByRole('button').click();
      await page.getByTestId('client-secret-once').waitFor();
      // The list reloads after the secret is shown.
      await page.getByTestId('client-row').first().waitFor();
      assert.equal(await page.getByTestId('client-row').count(), 1);
      await page.getByTestId('make-link').click();
      await page.getByTestId('console-link').waitFor();
      await checkPage(page, 'account');
      // The link is made for PUBLIC_URL; the test service listens on another port.
      const url = /https?:\/\/\S+#link=\S+/.exec((await page.getByTestId('console-link').textContent()) ?? '')![0].replace(/^.*\/console\//, `${t.url}/console/`);

      // A new tab has its own sessionStorage: it starts signed out, as a colleague's browser would.
      const first = await browser.newPage();
      await first.goto(url);
      await first.getByTestId('sign-out').waitFor();
      assert.ok(!first.url().includes('#link='), 'the code leaves the address bar');
      assert.equal(await first.getByTestId('nav-accounts').count(), 0, 'a client session does not see operator pages');
      const again = await browser.newPage();
      await again.goto(url);
      await again.getByTestId('link-problem').waitFor();
      await again.close();

      // The operator revokes the link (listed since it was made): the developer's session is cut off at its next call.
      const row = page.getByTestId('console-link-row').first();
      await row.waitFor();
      await row.getByTestId('revoke-console-link').click();
      await row.getByTestId('revoke-console-link-confirm').click();
      await page
        .getByTestId('console-link-row')
        .filter({ hasText: /revoked/ })
        .waitFor();
      await first.getByTestId('nav-subscriptions').click();
      await first.getByTestId('session-expired').waitFor();
      await first.close();

      await page.close();
    });

    it('the operator creates, edits and deletes an experience with its prizes; an edit leaves stock taken meanwhile alone', async () => {
      const page = await open('/console/admin/experiences');
      await signIn(page, t.operator);
      const adminToken = await t.token(t.operator);
      const existing = (await api(t.url, 'GET', '/v2/admin/experiences', { token: adminToken })).body as any[];
      if (existing.length === 0) {
        await page.getByTestId('no-experiences').waitFor();
        await checkPage(page, 'experiences-empty');
      }
      await page.getByTestId('new-experience').click();
      await page.getByTestId('experience-form').waitFor();
      const name = `spring-${Date.now()}`;
      await page.getByTestId('exp-name').fill(name);
      await page.getByTestId('exp-title').fill('Spring sale');
      await page.getByTestId('exp-events').fill('purchase, signup');
      await page.getByTestId('add-prize').click();
      const prize = page.getByTestId('prize-form').first();
      await prize.getByTestId('prize-id').fill('bad id');
      await prize.getByTestId('prize-title').fill('5 off');
      await prize.getByTestId('prize-bucket').fill('spring-coupons');
      await prize.getByTestId('prize-value').fill('5');
      await prize.getByTestId('prize-stock').fill('5');
      await page.getByTestId('exp-save').click();
      // The API's answer lands under the prize's id, in words.
      await prize.getByTestId('field-error').waitFor();
      await checkPage(page, 'experience-new');
      await prize.getByTestId('prize-id').fill('coupon-5');
      await page.getByTestId('exp-save').click();
      await page.getByTestId('experience').filter({ hasText: name }).waitFor();
      const created = ((await api(t.url, 'GET', '/v2/admin/experiences', { token: adminToken })).body as any[]).find((x) => x.name === name);
      assert.deepEqual(created.events, ['purchase', 'signup']);
      assert.deepEqual(
        created.prizes.map((p: any) => [p.id, p.bucket, p.value, p.stock, p.kind]),
        [['coupon-5', 'spring-coupons', 5, 5, 'coupon']],
      );
      await checkPage(page, 'experiences');

      // Opened for editing, then two units are taken elsewhere: saving a new title must not put them back.
      await page.getByTestId('experience').filter({ hasText: name }).getByRole('link').click();
      await page.getByTestId('experience-form').waitFor();
      await api(t.url, 'PUT', `/v2/admin/experiences/${created.id}`, { token: adminToken, body: { prizes: [{ ...created.prizes[0], stock: 3 }] } });
      await page.getByTestId('exp-title').fill('Spring sale, week 2');
      await page.getByTestId('exp-save').click();
      await page.getByTestId('experience').filter({ hasText: 'Spring sale, week 2' }).waitFor();
      const edited = (await api(t.url, 'GET', `/v2/admin/experiences/${created.id}`, { token: adminToken })).body;
      assert.equal(edited.prizes[0].stock, 3, 'the stock taken meanwhile stays taken');
      // A stock typed in is the new stock.
      await page.getByTestId('experience').filter({ hasText: name }).getByRole('link').click();
      await page.getByTestId('prize-stock').fill('10');
      await page.getByTestId('exp-save').click();
      await page.getByTestId('experience').filter({ hasText: name }).getByTestId('stock').getByText('10').waitFor();

      await page.getByTestId('experience').filter({ hasText: name }).getByRole('link').click();
      await page.getByTestId('delete-experience').click();
      await page.getByTestId('delete-experience-confirm').click();
      await page.getByRole('heading', { name: 'Experiences', level: 1 }).waitFor();
      assert.equal((await api(t.url, 'GET', `/v2/admin/experiences/${created.id}`, { token: adminToken })).status, 404);
      await page.close();
    });

    it('an expired session goes back to sign-in with a clear message, and so does a token the API refuses', async () => {
      const { client } = await tenant();
      // The browser's clock is mocked: the session's hour passes at once.
      const page = await browser.newPage();
      await page.clock.install();
      await page.goto(`${t.url}/console/`);
      await signIn(page, client);
      await page.clock.fastForward('01:00:05');
      await page.getByTestId('session-expired').waitFor();
      assert.match((await page.getByTestId('session-expired').textContent()) ?? '', /expired/i);
      await page.close();

      const refused = await open();
      await signIn(refused, client);
      await refused.evaluate(() => {
        const key = 'rewards-console-session';
        const stored = JSON.parse(sessionStorage.getItem(key)!);
        sessionStorage.setItem(key, JSON.stringify({ ...stored, token: `${stored.token.slice(0, -6)}AAAAAA` }));
      });
      // The restored session is checked once at load: the API answers 401, the console signs out.
      await refused.reload();
      await refused.getByTestId('session-expired').waitFor();
      await refused.close();
    });
  });
}
