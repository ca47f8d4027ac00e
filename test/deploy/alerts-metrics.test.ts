// needs: database
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Every metric the shipped alerting rules and Grafana dashboard name (deploy/, docs/deployment.md
 * "Metrics and alerts") is one the running service exports on /metrics: a rename in src/metrics.ts
 * that leaves them behind fails here, not silently in production. `up` is Prometheus' own; a
 * histogram's `_bucket`, `_sum` and `_count` series are its base name's.
 */

const ROOT = new URL('../..', import.meta.url).pathname;
const METRIC = /\brewards_[a-z0-9_]+/g;

/** The `expr:` of every rule, one-line or a block (`expr: |` and the lines indented under it). */
function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n');
  const exprs: string[] = [];
  lines.forEach((line, i) => {
    const match = /^(\s*)expr: (.*)$/.exec(line);
    if (!match) return;
    const [, indent, value] = match as unknown as [string, string, string];
    if (!/^[|>]/.test(value)) return void exprs.push(value);
    const block: string[] = [];
    for (const next of lines.slice(i + 1)) {
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent.length) break;
      block.push(next.trim());
    }
    exprs.push(block.join(' '));
  });
  return exprs;
}

interface Panel {
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** The queries of every panel (rows' panels included) and of the dashboard's variables. */
function dashboardExpressions(dashboard: { panels: Panel[]; templating: { list: { query?: string | { query?: string } }[] } }): string[] {
  const panels = (list: Panel[]): Panel[] => list.flatMap((panel) => [panel, ...panels(panel.panels ?? [])]);
  return [
    ...panels(dashboard.panels).flatMap((panel) => (panel.targets ?? []).map((target) => target.expr ?? '')),
    ...dashboard.templating.list.map((variable) => (typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? ''))),
  ];
}

const rules = ruleExpressions(readFileSync(join(ROOT, 'deploy/prometheus/rewards-alerts.yaml'), 'utf8'));
const queries = dashboardExpressions(JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/rewards-dashboard.json'), 'utf8')));
const named = (exprs: string[]) => [...new Set(exprs.flatMap((expr) => expr.match(METRIC) ?? []))].sort();

describe('the metrics the alerts and the dashboard name', () => {
  it('are read from every rule and every query', () => {
    assert.equal(rules.length, [...readFileSync(join(ROOT, 'deploy/prometheus/rewards-alerts.yaml'), 'utf8').matchAll(/^\s*- alert: /gm)].length);
    assert.ok(rules.every((expr) => expr.length > 0));
    assert.ok(named(rules).length >= 7, named(rules).join(', '));
    assert.ok(named(queries).length >= 15, named(queries).join(', '));
  });
});

for (const dialect of testDialects()) {
  describe(`the metrics the alerts and the dashboard name, on the running service [${dialect}]`, () => {
    let t: TestApp;
    let text: string;
    let types: Map<string, string>;
    before(async () => {
      t = await startTestApp(dialect);
      const response = await fetch(`${t.url}/metrics`);
      assert.equal(response.status, 200);
      text = await response.text();
      types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1]!, match[2]!]));
    });
    after(() => t.close());

    /** The names of `exprs` that /metrics has no `# TYPE` for (a histogram's series count as their base name). */
    const missing = (exprs: string[]) =>
      named(exprs).filter((name) => {
        if (types.has(name)) return false;
        const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
        return !(base && types.get(base) === 'histogram');
      });

    it('deploy/prometheus/rewards-alerts.yaml: every metric of the rules is exported', () => {
      assert.deepEqual(missing(rules), []);
    });

    it('deploy/grafana/rewards-dashboard.json: every metric of the panels and variables is exported', () => {
      assert.deepEqual(missing(queries), []);
    });

    it('readiness, the room left in DATA_DIR and the size of the database have values', () => {
      const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      assert.equal(value('rewards_ready'), 1);
      assert.ok(value('rewards_data_dir_available_bytes') > 0, 'rewards_data_dir_available_bytes');
      // A migrated database: more than a few pages, whichever the engine.
      assert.ok(value('rewards_database_size_bytes') > 64 * 1024, `rewards_database_size_bytes ${value('rewards_database_size_bytes')}`);
    });
  });
}
