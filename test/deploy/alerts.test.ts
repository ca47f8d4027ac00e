// needs: nothing
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, it } from 'node:test';

/**
 * The alerts and the dashboard that ship with the service (deploy/, docs/deployment.md "Metrics and
 * alerts"): the rules load (`promtool check rules`), their unit tests pass (`promtool test rules`:
 * every alert fires on its series and stays quiet on others), and the Grafana dashboard is JSON
 * Grafana imports, on a Prometheus data source picked in the dashboard, whose every query is
 * PromQL. That every metric they name is exported is test/deploy/alerts-metrics.test.ts.
 *
 * promtool is Debian's `prometheus` package; `.ci/run` installs it. On a machine without it these
 * tests say they were skipped (with CI or REQUIRE_SNIPPET_RUNTIMES set they run, and fail).
 */

const ROOT = new URL('../..', import.meta.url).pathname;
const RULES = 'deploy/prometheus/rewards-alerts.yaml';
const RULE_TESTS = 'deploy/prometheus/rewards-alerts.test.yaml';
const DASHBOARD = 'deploy/grafana/rewards-dashboard.json';

/** promtool on PATH (Debian's prometheus package puts it in /usr/bin), or undefined. */
const PROMTOOL = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir !== '')
  .map((dir) => join(dir, 'promtool'))
  .find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const skip =
  PROMTOOL || process.env.CI || process.env.REQUIRE_SNIPPET_RUNTIMES
    ? false
    : 'no promtool on this machine (apt-get install prometheus; .ci/run installs it). Set CI or REQUIRE_SNIPPET_RUNTIMES to make this a failure';

/** Runs promtool and returns what it said; fails with that when it fails, and clearly where it is required and missing. */
function promtoolPasses(...args: string[]): string {
  assert.ok(PROMTOOL, 'promtool is not installed: apt-get install prometheus (Debian) or put promtool on PATH; .ci/run installs it');
  const run = spawnSync(PROMTOOL, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  const output = `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? String(run.error) : ''}`;
  assert.equal(run.status, 0, `promtool ${args.join(' ')} failed:\n${output}`);
  return output;
}

const rulesText = readFileSync(join(ROOT, RULES), 'utf8');
const alertNames = [...rulesText.matchAll(/^\s*- alert: (\w+)$/gm)].map((match) => match[1]!);

/** The alerts and their severities, as docs/deployment.md ("Metrics and alerts") lists them with what to do. */
const ALERTS: Record<string, 'critical' | 'warning' | 'info'> = {
  RewardsJobsWaiting: 'warning',
  RewardsJobsStalled: 'critical',
  RewardsWebhookAttemptsFailing: 'warning',
  RewardsNotReady: 'critical',
  RewardsDatabaseNotAnswering: 'critical',
  RewardsTargetDown: 'critical',
  RewardsJobLeasesLost: 'warning',
  RewardsDiskFillingUp: 'warning',
  RewardsDiskAlmostFull: 'critical',
  RewardsEndpointCircuitsOpen: 'info',
  RewardsNotificationsHeld: 'warning',
};

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id?: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  uid?: string;
  title?: string;
  schemaVersion?: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string }; datasource?: { uid?: string } }[] };
}

const dashboard = JSON.parse(readFileSync(join(ROOT, DASHBOARD), 'utf8')) as Dashboard;
const allPanels = (panels: Panel[]): Panel[] => panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);

describe('the Prometheus alerting rules (deploy/prometheus)', { skip }, () => {
  it('load: promtool check rules', () => {
    const output = promtoolPasses('check', 'rules', RULES);
    assert.match(output, new RegExp(`SUCCESS: ${alertNames.length} rules found`));
  });

  it("pass their unit tests: promtool test rules (each alert's firing and quiet cases)", () => {
    promtoolPasses('test', 'rules', RULE_TESTS);
  });
});

describe('the unit tests of the rules', () => {
  it('give every alert a case where it fires and one where it stays quiet', () => {
    assert.ok(alertNames.length >= 10, `alerts found in ${RULES}: ${alertNames.join(', ')}`);
    const cases = [...readFileSync(join(ROOT, RULE_TESTS), 'utf8').matchAll(/alertname: (\w+)\n\s*exp_alerts:(.*)$/gm)].map((match) => ({
      alert: match[1]!,
      fires: match[2]!.trim() !== '[]',
    }));
    const unknown = cases.filter((c) => !alertNames.includes(c.alert)).map((c) => c.alert);
    assert.deepEqual(unknown, [], 'cases of alerts the rules do not have');
    for (const alert of alertNames) {
      assert.ok(
        cases.some((c) => c.alert === alert && c.fires),
        `${alert}: no case where it fires`,
      );
      assert.ok(
        cases.some((c) => c.alert === alert && !c.fires),
        `${alert}: no case where it stays quiet`,
      );
    }
  });

  it('label every alert with a severity and explain it', () => {
    const blocks = rulesText.split(/^\s*- alert: /m).slice(1);
    assert.equal(blocks.length, alertNames.length);
    for (const block of blocks) {
      const name = block.split('\n', 1)[0];
      assert.match(block, /\n\s*severity: (critical|warning|info)\n/, `${name}: severity critical, warning or info`);
      assert.match(block, /\n\s*summary: /, `${name}: a summary`);
      assert.match(block, /\n\s*description: /, `${name}: a description (what to do)`);
    }
  });
});

describe('the alerts docs/deployment.md lists', () => {
  it('are those of the rules, with the same severities', () => {
    const inRules = Object.fromEntries(
      rulesText
        .split(/^\s*- alert: /m)
        .slice(1)
        .map((block) => [block.split('\n', 1)[0], /\n\s*severity: (\w+)\n/.exec(block)?.[1]]),
    );
    assert.deepEqual(inRules, ALERTS);
    const section = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8').split('### Metrics and alerts\n')[1]?.split(/\n## /)[0] ?? '';
    const inDocs = Object.fromEntries([...section.matchAll(/^\| `(Rewards\w+)` \| (\w+) \| .+ \| .+ \|$/gm)].map((match) => [match[1], match[2]]));
    assert.deepEqual(inDocs, ALERTS, 'docs/deployment.md, "Metrics and alerts": one row per alert (name, severity, when, what to do)');
  });
});

describe('the Grafana dashboard (deploy/grafana)', () => {
  const panels = allPanels(dashboard.panels);
  const queries = panels.filter((panel) => panel.type !== 'row');

  it('is a dashboard with a uid, a title and panels on a grid', () => {
    assert.equal(typeof dashboard.uid, 'string');
    assert.equal(typeof dashboard.title, 'string');
    assert.ok(typeof dashboard.schemaVersion === 'number' && dashboard.schemaVersion >= 36);
    const ids = panels.map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    for (const panel of panels) {
      assert.ok(panel.gridPos && panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title}: on the 24-column grid`);
    }
    assert.ok(queries.length >= 10);
  });

  it('takes its Prometheus data source from the variable DS_PROMETHEUS (any Prometheus data source of the Grafana it is imported in)', () => {
    const variable = dashboard.templating.list.find((v) => v.name === 'DS_PROMETHEUS');
    assert.deepEqual({ type: variable?.type, query: variable?.query }, { type: 'datasource', query: 'prometheus' });
    for (const panel of queries) {
      assert.deepEqual(panel.datasource, { type: 'prometheus', uid: '${DS_PROMETHEUS}' }, `${panel.title}: its data source`);
      assert.ok(panel.targets && panel.targets.length > 0, `${panel.title}: queries`);
      for (const target of panel.targets) assert.equal(target.datasource?.uid, '${DS_PROMETHEUS}', `${panel.title}: a query's data source`);
    }
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) assert.equal(v.datasource?.uid, '${DS_PROMETHEUS}', `variable ${v.name}`);
  });

  it('names only alerts the rules have', () => {
    const named = new Set([...JSON.stringify(dashboard).matchAll(/\bRewards[A-Z]\w+/g)].map((match) => match[0]));
    assert.deepEqual(
      [...named].filter((name) => !alertNames.includes(name)),
      [],
    );
  });

  describe('queries', { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'rewards-dashboard-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('are PromQL, with the dashboard variables given values (promtool check rules)', () => {
      const exprs = queries.flatMap((panel) => (panel.targets ?? []).map((target) => ({ title: panel.title, expr: target.expr ?? '' })));
      // One recording rule per query: promtool parses each expression.
      const concrete = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '1m').replaceAll('$job', '.*').replaceAll('$instance', '.*');
      const rules = exprs.map(({ expr }, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(concrete(expr))}\n`).join('');
      const file = join(dir, 'dashboard-queries.yaml');
      writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}`);
      for (const { title, expr } of exprs) assert.doesNotMatch(concrete(expr), /\$/, `${title}: a variable the check does not know`);
      promtoolPasses('check', 'rules', file);
    });
  });
});
