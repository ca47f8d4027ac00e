// `npm run chaos [-- --short] [-- --only kill-service,failover] [-- --seconds 60 --rate 300] [-- --runs 3]`:
// fault runs against the real service on loopback, each followed by a check of the books
// (chaos/harness.ts). PostgreSQL runs need CHAOS_POSTGRES_URL (or TEST_POSTGRES_URL); some
// scenarios need root (pg_ctlcluster, mounting a tmpfs, Patroni and iptables) and say so when they
// cannot run. `--only` takes scenario names or their prefixes (`failover` is the three failover
// runs); `--runs N` runs each N times and prints the median of each figure.
import { FAILOVER_GOALS } from './failover.js';
import { SCENARIOS, type Outcome } from './scenarios.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const short = args.includes('--short');
const secondsFlag = flag('--seconds');
const rateFlag = flag('--rate');
const runs = Number(flag('--runs') ?? 1);
const only = flag('--only')?.split(',');
const postgresUrl = process.env.CHAOS_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL;
const chosen = (key: string) => !only || only.some((name) => key === name || key.startsWith(`${name}-`));

const outcomes: Outcome[] = [];
const skipped: string[] = [];
const started = Date.now();
for (const [key, scenario] of Object.entries(SCENARIOS)) {
  if (!chosen(key)) continue;
  const rate = Number(rateFlag ?? scenario.rate ?? (short ? 100 : 300));
  const seconds = Number(secondsFlag ?? (short ? 4 : (scenario.seconds ?? 60)));
  for (const dialect of scenario.dialects) {
    const why = dialect === 'postgres' && !postgresUrl && !key.startsWith('failover') ? 'set CHAOS_POSTGRES_URL or TEST_POSTGRES_URL' : scenario.unavailable?.();
    if (why) {
      skipped.push(`${scenario.name} [${dialect}]: skipped (${why})`);
      continue;
    }
    for (let run = 1; run <= runs; run++) {
      process.stderr.write(`${scenario.name} [${dialect}]${runs > 1 ? ` run ${run}/${runs}` : ''}: ${seconds} s at ${rate} requests/s…\n`);
      const runStarted = Date.now();
      const outcome = await scenario.run({ seconds, rate, postgresUrl, short }, dialect);
      outcomes.push(outcome);
      const verdict = outcome.problems.length === 0 ? 'PASS' : `FAIL: ${outcome.problems.join('; ')}`;
      const figures = Object.entries(outcome.figures ?? {}).map(([name, value]) => `${name} ${round(value)}`);
      console.log(
        `${outcome.scenario} [${dialect}] (${((Date.now() - runStarted) / 1000).toFixed(0)} s): requests sent ${outcome.sent} / acknowledged ${outcome.acknowledged} / stored ${outcome.stored} / final ${outcome.final}; ` +
          `notifications due ${outcome.due} / delivered ${outcome.delivered} / duplicated ${outcome.duplicated}; refused ${outcome.refused}; ${[...outcome.notes, ...figures].join('; ')} → ${verdict}`,
      );
    }
  }
}
console.log('\n| fault | db | requests sent / acknowledged / final | notifications due / delivered / duplicated | verdict |\n|---|---|---|---|---|');
for (const o of outcomes) {
  console.log(`| ${o.scenario} | ${o.dialect} | ${o.sent} / ${o.acknowledged} / ${o.final} | ${o.due} / ${o.delivered} / ${o.duplicated} | ${o.problems.length === 0 ? 'pass' : 'FAIL'} |`);
}
printMedians(outcomes);
for (const line of skipped) console.log(line);
console.log(`\nchaos: ${outcomes.length} runs in ${((Date.now() - started) / 1000).toFixed(0)} s, ${outcomes.filter((o) => o.problems.length > 0).length} failed`);
process.exit(outcomes.some((o) => o.problems.length > 0) ? 1 : 0);

function round(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** Per scenario with figures: the median of each over its runs, and the goal it is held to, if any. */
function printMedians(all: Outcome[]): void {
  const byScenario = new Map<string, Outcome[]>();
  for (const outcome of all) if (outcome.figures) byScenario.set(outcome.scenario, [...(byScenario.get(outcome.scenario) ?? []), outcome]);
  if (byScenario.size === 0) return;
  const names = [...new Set([...byScenario.values()].flatMap((list) => list.flatMap((o) => Object.keys(o.figures!))))];
  console.log(`\n| figure (median of ${runs} run${runs > 1 ? 's' : ''}) | ${[...byScenario.keys()].join(' | ')} | goal |\n|---|${[...byScenario.keys()].map(() => '---|').join('')}---|`);
  for (const name of names) {
    const medians = [...byScenario.values()].map((list) => median(list.map((o) => o.figures![name]).filter((v): v is number => v !== undefined)));
    const goal = FAILOVER_GOALS[name];
    const met = goal === undefined ? '' : medians.every((value) => value <= goal) ? `≤ ${goal}: met` : `≤ ${goal}: MISSED`;
    console.log(`| ${name} | ${medians.map(round).join(' | ')} | ${met} |`);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
