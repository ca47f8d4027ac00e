// `npm run chaos [-- --short] [-- --only kill-service,disk-full] [-- --seconds 60 --rate 300]`:
// fault runs against the real service on loopback, each followed by a check of the books
// (chaos/harness.ts). PostgreSQL runs need CHAOS_POSTGRES_URL (or TEST_POSTGRES_URL); some
// scenarios need root (pg_ctlcluster, mounting a tmpfs) and say so when they cannot run.
import { SCENARIOS, type Outcome } from './scenarios.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const short = args.includes('--short');
const seconds = Number(flag('--seconds') ?? (short ? 4 : 60));
const rate = Number(flag('--rate') ?? (short ? 100 : 300));
const only = flag('--only')?.split(',');
const postgresUrl = process.env.CHAOS_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL;

const outcomes: Outcome[] = [];
const skipped: string[] = [];
const started = Date.now();
for (const [key, scenario] of Object.entries(SCENARIOS)) {
  if (only && !only.includes(key)) continue;
  for (const dialect of scenario.dialects) {
    const why = dialect === 'postgres' && !postgresUrl ? 'set CHAOS_POSTGRES_URL or TEST_POSTGRES_URL' : scenario.unavailable?.();
    if (why) {
      skipped.push(`${scenario.name} [${dialect}]: skipped (${why})`);
      continue;
    }
    process.stderr.write(`${scenario.name} [${dialect}]: ${seconds} s at ${rate} requests/s…\n`);
    const runStarted = Date.now();
    const outcome = await scenario.run({ seconds, rate, postgresUrl }, dialect);
    outcomes.push(outcome);
    const verdict = outcome.problems.length === 0 ? 'PASS' : `FAIL: ${outcome.problems.join('; ')}`;
    console.log(
      `${outcome.scenario} [${dialect}] (${((Date.now() - runStarted) / 1000).toFixed(0)} s): requests sent ${outcome.sent} / acknowledged ${outcome.acknowledged} / stored ${outcome.stored} / final ${outcome.final}; ` +
        `notifications due ${outcome.due} / delivered ${outcome.delivered} / duplicated ${outcome.duplicated}; refused ${outcome.refused}; ${outcome.notes.join('; ')} → ${verdict}`,
    );
  }
}
console.log('\n| fault | db | requests sent / acknowledged / final | notifications due / delivered / duplicated | verdict |\n|---|---|---|---|---|');
for (const o of outcomes) {
  console.log(`| ${o.scenario} | ${o.dialect} | ${o.sent} / ${o.acknowledged} / ${o.final} | ${o.due} / ${o.delivered} / ${o.duplicated} | ${o.problems.length === 0 ? 'pass' : 'FAIL'} |`);
}
for (const line of skipped) console.log(line);
console.log(`\nchaos: ${outcomes.length} runs in ${((Date.now() - started) / 1000).toFixed(0)} s, ${outcomes.filter((o) => o.problems.length > 0).length} failed`);
process.exit(outcomes.some((o) => o.problems.length > 0) ? 1 : 0);
