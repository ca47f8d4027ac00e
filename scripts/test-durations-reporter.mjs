// A test reporter for scripts/run-tests.mjs: one JSON line per top-level test (its file, its
// database as tagged in its name, "[sqlite]" or "[postgres]", and how long it took) and one per
// test case (for the counts per database). The file is where the test was defined, not the
// bundle that imported it.
const DIALECT = /\[(sqlite|postgres)\]/;

export default async function* durations(source) {
  const ancestors = new Map(); // file → names of the tests being reported, by nesting
  for await (const event of source) {
    const { type, data } = event;
    if (!data?.file) continue;
    if (type === 'test:start') {
      const stack = ancestors.get(data.file) ?? [];
      stack.length = data.nesting;
      stack.push(data.name);
      ancestors.set(data.file, stack);
      continue;
    }
    if (type !== 'test:pass' && type !== 'test:fail') continue;
    const names = [...(ancestors.get(data.file) ?? []).slice(0, data.nesting), data.name];
    const dialect = names.map((name) => DIALECT.exec(name)?.[1]).find(Boolean) ?? 'any';
    const record = { file: data.file, dialect };
    if (data.nesting === 0) yield `${JSON.stringify({ ...record, ms: data.details.duration_ms })}\n`;
    if (data.details.type !== 'suite' && !data.skip && !data.todo) yield `${JSON.stringify({ ...record, case: type === 'test:pass' ? 'pass' : 'fail' })}\n`;
  }
}
