#!/usr/bin/env node
// How often the docs state a rule in more than one place. README.md and docs/*.md are split into
// sentences: fenced code, HTML comments, headings and tables' separator rows are left out; a table
// row, a list item and a paragraph are each a block of their own; quoted text is dropped. Each
// sentence is normalised (lower case, no backticks, no punctuation) and cut into 8-word shingles.
// Two sentences state the same thing when they share a shingle; sentences of fewer than 8 words
// are ignored, and so are shingles made mostly of paths, file names, numbers and little words (a
// list of links is not a rule). A repeated passage is a cluster of sentences linked that way: it
// sits in two or more places.
//
//   node scripts/docs-repetition.mjs            the figures
//   node scripts/docs-repetition.mjs --list     and the repeated passages, most places first
//   node scripts/docs-repetition.mjs --list=N   the first N of them (default 20)
//
// Always exits 0: it measures, it does not judge. The output depends only on the pages.
import { Buffer } from 'node:buffer';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SHINGLE = 8;
const STOPWORDS = new Set('a an and are as at be by for from has have in is it its no not of on one or so that the then this to was when where which with without'.split(' '));
const ABBREVIATIONS = /\b(e\.g|i\.e|etc|vs|cf|approx|incl)\.$/i;

const root = fileURLToPath(new URL('..', import.meta.url));
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => `docs/${file}`),
];

/** The page's blocks of prose: {line, text}, one per paragraph, list item, table row or heading. */
function blocks(text) {
  const found = [];
  let fence = null;
  let comment = false;
  let current = null;
  const flush = () => {
    if (current) found.push(current);
    current = null;
  };
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    const marker = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (marker && marker[1][0] === fence[0] && marker[1].length >= fence.length) fence = null;
      return;
    }
    if (marker) {
      flush();
      fence = marker[1];
      return;
    }
    if (comment || /^\s*<!--/.test(line)) {
      comment = !line.includes('-->');
      flush();
      return;
    }
    if (line.trim() === '' || /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line)) return flush();
    if (/^\s*#{1,6}\s/.test(line)) return flush(); // a title, not a rule
    if (/^\s*([-*+]\s|\d+[.)]\s|\|)/.test(line) || !current) {
      flush();
      current = { line: i + 1, text: line.trim() };
      if (/^\s*\|/.test(line)) flush();
    } else current.text += `\n${line.trim()}`;
  });
  flush();
  return found;
}

/** A block's sentences, each with the line it starts on. */
function sentences(block) {
  const text = block.text
    .replace(/^([-*+]|\d+[.)])\s+/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\s*(?<!\\)\|\s*/g, ' | ');
  const found = [];
  let start = 0;
  for (const m of text.matchAll(/[.!?](?=[\s)]*\s+[A-Z`"(\d*])/g)) {
    const end = m.index + 1;
    if (ABBREVIATIONS.test(text.slice(Math.max(0, end - 8), end))) continue;
    found.push({ offset: start, text: text.slice(start, end) });
    start = end;
  }
  found.push({ offset: start, text: text.slice(start) });
  return found
    .map(({ offset, text: sentence }) => ({ line: block.line + (text.slice(0, offset).match(/\n/g)?.length ?? 0) + (/^\s*\n/.test(sentence) ? 1 : 0), text: sentence.replace(/\s+/g, ' ').trim() }))
    .filter(({ text: sentence }) => sentence !== '');
}

/** Lower case, no backticks or markup, punctuation as spaces: the sentence's words. */
function words(sentence) {
  return sentence
    .toLowerCase()
    .replace(/"[^"]*"|“[^”]*”/g, ' ') // quoted titles of other sections, messages: not the rule's words
    .replace(/[`*_'’]/g, '')
    .replace(/[^\p{L}\p{N}/.-]+/gu, ' ')
    .replace(/(^|\s)[.\-/]+|[.\-/]+(?=\s|$)/g, ' ')
    .split(' ')
    .filter((word) => word !== '');
}

/** A shingle that is mostly paths, file names, numbers and little words says no rule. */
function meaningful(shingle) {
  const content = shingle.filter((word) => !STOPWORDS.has(word) && !/[/.]/.test(word) && !/^\d/.test(word));
  return content.length >= SHINGLE / 2;
}

const all = [];
let bytes = 0;
for (const page of pages) {
  const text = readFileSync(join(root, page), 'utf8');
  bytes += Buffer.byteLength(text);
  for (const block of blocks(text)) {
    for (const sentence of sentences(block)) {
      const list = words(sentence.text);
      if (list.length >= SHINGLE) all.push({ page, line: sentence.line, text: sentence.text, words: list });
    }
  }
}

// Sentences sharing a shingle, joined (union-find over sentence indexes).
const parent = all.map((_, i) => i);
const find = (i) => {
  while (parent[i] !== i) i = parent[i] = parent[parent[i]];
  return i;
};
const firstWith = new Map();
const linked = new Set();
all.forEach((sentence, i) => {
  for (let k = 0; k + SHINGLE <= sentence.words.length; k++) {
    const shingle = sentence.words.slice(k, k + SHINGLE);
    if (!meaningful(shingle)) continue;
    const key = shingle.join(' ');
    const first = firstWith.get(key);
    if (first === undefined) firstWith.set(key, i);
    else if (first !== i) {
      const [a, b] = [find(first), find(i)];
      if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      linked.add(first).add(i);
    }
  }
});

const clusters = new Map();
for (const i of [...linked].sort((a, b) => a - b)) {
  const top = find(i);
  if (!clusters.has(top)) clusters.set(top, []);
  clusters.get(top).push(all[i]);
}
const repeated = [...clusters.values()].map((members) => ({ members, pages: new Set(members.map(({ page }) => page)).size }));
repeated.sort((a, b) => b.members.length - a.members.length || b.pages - a.pages || a.members[0].page.localeCompare(b.members[0].page) || a.members[0].line - b.members[0].line);

const across = repeated.filter(({ pages: count }) => count > 1).length;
const repeatedBytes = repeated.reduce((sum, { members }) => sum + members.reduce((s, { text }) => s + Buffer.byteLength(text), 0), 0);
console.log(`Docs: ${pages.length} pages, ${bytes} bytes, ${all.length} sentences of ${SHINGLE}+ words.`);
console.log(`Repeated passages: ${repeated.length} (${across} across pages, ${repeated.length - across} within one page), ${linked.size} sentences, ${repeatedBytes} bytes.`);

const listArg = process.argv.slice(2).find((arg) => arg === '--list' || arg.startsWith('--list='));
if (listArg) {
  const limit = listArg.includes('=') ? Number(listArg.split('=')[1]) : 20;
  for (const [n, { members, pages: count }] of repeated.slice(0, limit).entries()) {
    console.log(`\n${n + 1}. ${members.length} places, ${count} page${count === 1 ? '' : 's'}`);
    for (const { page, line, text } of members) console.log(`   ${page}:${line}  ${text.length > 160 ? `${text.slice(0, 157)}...` : text}`);
  }
}
