// What a test run runs, and in which process (scripts/run-tests.mjs). Each test file says on its
// first line what it needs:
//
//   // needs: database, every-node-line
//
//   database         it runs once per tested database (it loops over testDialects())
//   sqlite, postgres it runs only when that database is tested (a driver's own test)
//   chromium         the console's browser (skipped, with a note, where /usr/bin/chromium is missing)
//   python, go, java a foreign runtime (docs snippets)
//   every-node-line  it runs on every Node.js line; the rest runs on the primary line only
//   nothing          none of the above
//
// A file without that line, or whose line disagrees with its code (it loops over testDialects() or
// imports test/support/browser.ts without saying "database" or "chromium", or says so and never
// does), stops the run before anything starts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const NEEDS = ['database', 'sqlite', 'postgres', 'chromium', 'python', 'go', 'java', 'every-node-line', 'nothing'];

/** The needs a file declares on its first line: null when the line is missing. */
export function declaredNeeds(source) {
  const match = /^\/\/ needs: (.+)$/m.exec(source.split('\n', 1)[0] ?? '');
  if (!match) return null;
  return match[1].split(',').map((need) => need.trim());
}

/**
 * Each file's needs, checked against what it imports. Throws one error listing every file whose
 * first line is missing, names an unknown need, or disagrees with its imports.
 */
export function readNeeds(root, files) {
  const problems = [];
  const needs = new Map();
  for (const file of files) {
    const source = readFileSync(join(root, file), 'utf8');
    const declared = declaredNeeds(source);
    if (declared === null) {
      problems.push(`${file}: no "// needs: …" first line (one or more of ${NEEDS.join(', ')})`);
      continue;
    }
    const unknown = declared.filter((need) => !NEEDS.includes(need));
    if (unknown.length > 0) problems.push(`${file}: unknown need ${unknown.join(', ')} (known: ${NEEDS.join(', ')})`);
    const loopsOverDatabases = /\btestDialects\(\)/.test(source);
    if (loopsOverDatabases !== declared.includes('database')) {
      problems.push(`${file}: ${loopsOverDatabases ? 'loops over testDialects() but does not say "database"' : 'says "database" but never loops over testDialects()'}`);
    }
    const opensBrowser = /from '[./]*\/support\/browser\.js'/.test(source);
    if (opensBrowser !== declared.includes('chromium')) {
      problems.push(`${file}: ${opensBrowser ? 'imports test/support/browser.ts but does not say "chromium"' : 'says "chromium" but never opens the browser (test/support/browser.ts)'}`);
    }
    if (declared.includes('nothing') && declared.length > 1) problems.push(`${file}: "nothing" with other needs`);
    needs.set(file, new Set(declared));
  }
  if (problems.length > 0) throw new Error(`Test files that do not say what they need:\n  ${problems.join('\n  ')}`);
  return needs;
}

/**
 * The files this run runs: on a line other than the primary one, only those that can differ
 * between lines; a file needing a database kind only when one it can use is tested.
 */
export function selectFiles(needs, { dialects, everyLineOnly }) {
  return [...needs.keys()].filter((file) => {
    const need = needs.get(file);
    if (everyLineOnly && !need.has('every-node-line')) return false;
    if (need.has('postgres') && !need.has('database')) return dialects.includes('postgres');
    if (need.has('sqlite')) return dialects.includes('sqlite');
    if (need.has('database')) return dialects.length > 0;
    return true;
  });
}

/** What a file is expected to take in this run (ms): its measured time for what it runs. */
export function estimate(durations, file, dialects) {
  const measured = durations[file];
  if (!measured) return 5_000;
  return (measured.any ?? 0) + dialects.reduce((sum, dialect) => sum + (measured[dialect] ?? 0), 0);
}

/** Longest first, each to the process with the least work so far. */
export function deal(files, count, cost) {
  const shares = Array.from({ length: Math.min(count, files.length) }, () => ({ files: [], ms: 0 }));
  for (const file of [...files].sort((a, b) => cost(b) - cost(a) || a.localeCompare(b))) {
    const lightest = shares.reduce((best, share) => (share.ms < best.ms ? share : best));
    lightest.files.push(file);
    lightest.ms += cost(file);
  }
  return shares;
}
