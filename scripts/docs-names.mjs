#!/usr/bin/env node
// Names in the docs that the code no longer has: every inline code span (`like this`, not fenced
// blocks) of README.md and docs/*.md is classified and checked against the repository.
//
//   path        contains a slash or ends with a known extension: the file or directory exists
//               (from the repository's root, or src/, test/, docs/, the page's directory; globs and
//               <placeholders> match any name; a trailing :line is ignored). A bare file name may
//               live in any directory. A file written at run time counts when the code names it: a
//               bare name; one in a directory .gitignore lists (data/…); one in a directory of the
//               tree whose name the code holds as a string ('durations.json').
//   env         UPPER_SNAKE_CASE, or a single word src/config.ts reads: occurs in src/, scripts/,
//               .ci/, bench/, chaos/, test/, console/vite.config.ts or a package.json
//   cli         `rewards <command> [<subcommand>] [--option]`: registered with commander in
//               src/cli; `npm run <x>`, `npm test`, `npm start`: a script of package.json;
//               `npm test -- <f>`: a test file whose path contains f; `npm run bench|chaos --
//               --only a,b`: names the code has; `scripts/x.sh …`, `node x.mjs`: the file exists;
//               a bare `--option`: some code of the repository defines it
//   route       `GET /path`, `GET|POST /path`, `…/tail`, a bare `/path`: a route the service
//               registers (src/app.ts, src/http/routes; /v1 and /v2 prefixes; {id}, :id, <id> and
//               an empty segment are parameters; a bare path may be the start of routes, /health),
//               or, bare, a page of the console (console/src/main.tsx); a bare `…/tail` is not
//               checked (it may end any URL)
//   package     `@scope/name`: a dependency in package.json or console/package.json
//   scope       `events:read`, `requests:*`: a scope the code names (when it has others of the
//               family: `host:port` is not checked)
//   identifier  one camelCase, PascalCase, snake_case, kebab-case or plain word, `name()`,
//               `name(args)`, `Foo.bar`, a metric with its labels, a prefix or suffix (`whsec_`,
//               `_pkey`, `rewards_job_*`), a query string's names (`?accountId=`): occurs as a
//               word in src/, test/, scripts/, bench/, chaos/, console/src, examples/, bin/ or
//               package.json, or in a fenced block of the page marked `<!-- snippet: … -->`
//               (test/docs runs those). A kebab-case name may also be a file's name without its
//               extension (a test, a scenario) or be composed as the console composes test ids
//               (`prefix="requests-"` + `next-page`, `${testid}-confirm`). Metrics: `rewards_` +
//               one of prom-client's default metrics (src/metrics.ts).
//
// Not checked: numbers, JSON, SQL and other phrases with spaces, status codes, header values,
// URLs, media types, addresses, system paths (/etc, /proc…), files outside the repository (../).
// Names that are not ours are in ALLOWLIST, or PostgreSQL's: a pg_ prefix, POSTGRES_SETTINGS.
//
// `node scripts/docs-names.mjs [FILE.md …]` prints the stale names by file and exits 1 if any;
// `--unchecked` lists instead the spans no rule checks (to keep that class honest).
// test/docs/docs-drift.test.ts runs it on every page.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Names that are not this project's, each with where it comes from. */
const ALLOWLIST = new Map([
  // HTTP and the web platform
  ['Cross-Origin-Opener-Policy', 'HTTP response header (HTML spec)'],
  ['Permissions-Policy', 'HTTP response header (W3C)'],
  ['Proxy-Authorization', 'HTTP hop-by-hop header (RFC 9110)'],
  ['Proxy-Connection', 'non-standard hop-by-hop header'],
  ['Keep-Alive', 'HTTP hop-by-hop header (RFC 9112)'],
  ['Trailer', 'HTTP header (RFC 9110)'],
  ['TE', 'HTTP header (RFC 9110)'],
  ['Upgrade', 'HTTP header (RFC 9110)'],
  ['Expect', 'HTTP header (RFC 9110)'],
  ['Referer', 'HTTP request header (RFC 9110)'],
  ['If-None-Match', 'HTTP conditional request header (RFC 9110)'],
  ['ETag', 'HTTP header (RFC 9110)'],
  ['Pragma', 'HTTP/1.0 cache header (RFC 9111)'],
  ['innerHTML', 'DOM property (what the console never uses)'],
  ['dangerouslySetInnerHTML', "React/Preact's raw-HTML property"],
  ['sessionStorage', 'Web Storage API'],
  ['localStorage', 'Web Storage API'],
  ['datetime-local', 'HTML input type'],
  // Other projects and tools
  ['svix', 'Svix, another webhook service (`svix listen`)'],
  ['Hook0', 'another webhook service'],
  ['worker_max_tasks', 'a Hook0 setting'],
  ['livenessProbe', 'Kubernetes container field'],
  ['readinessProbe', 'Kubernetes container field'],
  ['errors.Join', 'Go standard library'],
  ['goimports', 'Go tool'],
  ['go.mod', "Go's module file (`go mod init`, docs/receiving-webhooks.md)"],
  ['golang-go', 'Debian package'],
  ['openjdk-17-jdk-headless', 'Debian package'],
  ['java.net.http.HttpHeaders', 'Java standard library'],
  ['com.standardwebhooks.Webhook', "Standard Webhooks' Java library"],
  ['HttpExchange.getRequestHeaders', "the JDK's com.sun.net.httpserver"],
  ['Statement::~Statement', "better-sqlite3's C++ (a crash's stack)"],
  ['node::ObjectWrap', "Node.js's C++ API (a crash's stack)"],
  ['node::RemoveEnvironmentCleanupHook', "Node.js's C++ API (a crash's stack)"],
  ['sqlite3_clear_bindings', "SQLite's C API"],
  ['ExperimentalWarning', "Node.js's warning class"],
  ['util.parseEnv', 'Node.js API'],
  ['node:sqlite', 'Node.js built-in module'],
  ['tls.rootCertificates', 'Node.js API'],
  ['NODE_EXTRA_CA_CERTS', "Node.js's environment variable"],
  ['REDOCLY_TELEMETRY', "Redocly CLI's environment variable"],
  ['TCP_USER_TIMEOUT', 'Linux socket option'],
  ['--perf-basic-prof', "Node.js's (V8's) flag"],
  ['limit_conn', 'nginx directive'],
  ['lingering_close', 'nginx directive'],
  ['loop_wait', 'Patroni setting'],
  ['retry_timeout', 'Patroni setting'],
  ['use_pg_rewind', 'Patroni setting'],
  ['synchronous_mode', 'Patroni setting'],
  ['synchronous_mode_strict', 'Patroni setting'],
  // SQLite and PostgreSQL (settings: POSTGRES_SETTINGS; catalogs and functions: the pg_ prefix)
  ['integrity_check', 'SQLite pragma'],
  ['max_page_count', 'SQLite pragma'],
  ['json_each', 'SQLite function'],
  ['jsonb_to_recordset', 'PostgreSQL function'],
  ['bigserial', 'PostgreSQL type'],
  ['fillfactor', 'PostgreSQL storage parameter'],
  ['n_dead_tup', 'PostgreSQL statistics column'],
  ['replay_lag', 'PostgreSQL statistics column'],
  ['kill_prior_tuple', 'PostgreSQL btree internals'],
  ['SET', 'SQL command'],
  ['CHECKPOINT', 'SQL command'],
  ['ANALYZE', 'SQL command'],
  ['EXPLAIN', 'SQL command'],
]);

/** PostgreSQL's (and PgBouncer's) settings: not ours, and not to be taken for our identifiers either. */
const POSTGRES_SETTINGS = new Set([
  'application_name',
  'autovacuum_naptime',
  'client_connection_check_interval',
  'deadlock_timeout',
  'default_transaction_read_only',
  'hot_standby_feedback',
  'idle_in_transaction_session_timeout',
  'max_connections',
  'max_prepared_statements',
  'max_wal_size',
  'query_wait_timeout',
  'search_path',
  'server_idle_timeout',
  'statement_timeout',
  'synchronous_commit',
  'synchronous_standby_names',
  'tcp_keepalives_count',
  'tcp_keepalives_idle',
  'tcp_keepalives_interval',
]);

const EXTENSIONS = ['ts', 'tsx', 'mts', 'mjs', 'cjs', 'js', 'md', 'json', 'jsonc', 'sh', 'sql', 'yml', 'yaml', 'env', 'html', 'css', 'svg', 'png', 'txt', 'go', 'py', 'java', 'mod'];
const EXTENSION = new RegExp(`\\.(${EXTENSIONS.join('|')})$`);
/** Where the code is: the identifier index. */
const CODE_DIRS = ['src', 'test', 'scripts', 'bench', 'chaos', 'console/src', 'examples', 'bin', '.ci'];
const CODE_FILES = ['package.json', 'console/package.json', 'console/vite.config.ts'];
/** Where an environment variable may be read. */
const ENV_DIRS = ['src', 'scripts', '.ci', 'bench', 'chaos', 'test'];
const CODE_FILE = /\.(ts|tsx|mts|mjs|cjs|js|sh|sql|json|css|html)$|^run$/;
/** Not indexed: generated, or this checker and its test (which name stale names on purpose). */
const NOT_INDEXED = new Set(['console/src/api/schema.d.ts', 'scripts/docs-names.mjs', 'test/docs/docs-drift.test.ts']);
const SKIPPED_DIRS = new Set(['node_modules', '.git', '.cache', '.scratch', 'tmp', 'data']);
const METHODS = 'GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS';
const SYSTEM_PATH = /^\/(etc|proc|usr|var|tmp|dev|sys|home|opt|run|srv|bin|lib)(\/|$)/;
const UPPER_SNAKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9*]+)+$/;

const ok = (kind) => [[kind, null]];
const stale = (kind, reason) => [[kind, reason]];

// ---------------------------------------------------------------------------------------------
// The repository: read once per root.

const repositories = new Map();

function repository(root) {
  let repo = repositories.get(root);
  if (!repo) {
    repo = indexRepository(root);
    repositories.set(root, repo);
  }
  return repo;
}

function walk(root, dir, into) {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name)) continue;
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      into.dirs.push(path);
      walk(root, path, into);
    } else into.files.push(path);
  }
}

function indexRepository(root) {
  const tree = { files: [], dirs: [] };
  walk(root, '', tree);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const code = tree.files.filter((file) => CODE_FILES.includes(file) || (CODE_DIRS.some((dir) => file.startsWith(`${dir}/`)) && CODE_FILE.test(basename(file)) && !NOT_INDEXED.has(file)));
  const texts = new Map(code.map((file) => [file, readFileSync(join(root, file), 'utf8')]));
  const words = new Set();
  const dashed = new Set();
  const envWords = new Set();
  for (const [file, text] of texts) {
    const env = CODE_FILES.includes(file) || ENV_DIRS.some((dir) => file.startsWith(`${dir}/`));
    for (const [word] of text.matchAll(/[A-Za-z_$][\w$]*/g)) {
      words.add(word);
      if (env && /^[A-Z][A-Z0-9_]*$/.test(word)) envWords.add(word);
    }
    for (const [word] of text.matchAll(/[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)+/g)) dashed.add(word.toLowerCase());
  }
  // Pieces the console composes test ids of: `${testid}-confirm`, prefix="requests-".
  const all = [...texts.values()].join('\n');
  const composedSuffixes = new Set([...all.matchAll(/\}-([\w-]+)/g)].map((m) => m[1].toLowerCase()));
  const composedPrefixes = new Set([...all.matchAll(/["']([\w-]+)-["']/g)].map((m) => m[1].toLowerCase()));
  // A file's name without its extensions is a name too (`npm test -- bounded-waits`, a bench scenario).
  for (const file of tree.files) dashed.add(basename(file).replace(/\..*$/, '').toLowerCase());
  const source = (test) => code.filter(test).map((file) => texts.get(file));
  const gitignore = existsSync(join(root, '.gitignore')) ? readFileSync(join(root, '.gitignore'), 'utf8') : '';
  return {
    root,
    files: new Set(tree.files),
    dirs: new Set(tree.dirs),
    all: [...tree.files, ...tree.dirs],
    basenames: new Set([...tree.files, ...tree.dirs].map((path) => basename(path))),
    code: all,
    composedSuffixes,
    composedPrefixes,
    words,
    wordList: [...words],
    dashed,
    envWords,
    configWords: new Set([...(texts.get('src/config.ts') ?? '').matchAll(/\bread(?:<[^>]*>)?\('([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1])),
    runtimeDirs: [...gitignore.matchAll(/^\/?([\w.-]+(?:\/[\w.-]+)*)\/$/gm)].map((m) => m[1]),
    scripts: new Set(Object.keys(pkg.scripts ?? {})),
    testFiles: tree.files.filter((file) => file.startsWith('test/') && file.endsWith('.test.ts')),
    cli: commanderCommands(source((file) => file.startsWith('src/cli/')).join('\n')),
    routes: registeredRoutes(source((file) => file === 'src/app.ts' || file === 'src/ops-app.ts' || file.startsWith('src/http/routes/'))),
    consolePages: consolePages(texts.get('console/src/main.tsx') ?? ''),
    metrics: defaultMetrics(root, texts.get('src/metrics.ts') ?? ''),
  };
}

/** The commands commander is given in src/cli: top-level ones on `program`, subcommands on a group's variable. */
function commanderCommands(source) {
  const groups = new Map([...source.matchAll(/const (\w+) = program\s*\.command\('([\w-]+)'\)/g)].map((m) => [m[1], m[2]]));
  const commands = new Map();
  for (const m of source.matchAll(/(\w+)\s*\.command\('([\w-]+)'\)/g)) {
    const group = m[1] === 'program' ? m[2] : groups.get(m[1]);
    if (group === undefined) continue;
    if (!commands.has(group)) commands.set(group, new Set());
    if (m[1] !== 'program') commands.get(group).add(m[2]);
  }
  const options = new Set([...source.matchAll(/'(--[\w-]+)/g)].map((m) => m[1]));
  return { commands, options };
}

/** Routes as {method, path} with parameters as {}: those under /v1 and /v2 are given without the prefix. */
function registeredRoutes(sources) {
  const routes = [];
  for (const source of sources) {
    for (const m of source.matchAll(/\.(get|post|put|patch|delete)\(\s*'(\/[^']*)'/g)) routes.push({ method: m[1].toUpperCase(), path: normalisePath(m[2]) });
    // A fastify plugin that owns a prefix (the OpenAPI page).
    for (const m of source.matchAll(/routePrefix: '(\/[^']*)'/g)) routes.push({ method: 'GET', path: `${normalisePath(m[1])}/*` });
  }
  return routes;
}

/** The console's pages: a section of its navigation, then segments its router compares. */
function consolePages(source) {
  const sections = new Set([...source.matchAll(/path: '\/([\w-]*)/g)].map((m) => m[1]).filter(Boolean));
  const literals = new Set([...source.matchAll(/=== '([\w-]+)'/g)].map((m) => m[1]));
  return { sections, literals };
}

/** prom-client's default metrics (collectDefaultMetrics), with the prefix src/metrics.ts gives them. */
function defaultMetrics(root, metricsSource) {
  const prefix = /collectDefaultMetrics\(\{[^}]*prefix: '([\w]+)'/.exec(metricsSource)?.[1];
  const dir = join(root, 'node_modules', 'prom-client', 'lib', 'metrics');
  if (!prefix || !existsSync(dir)) return [];
  const names = new Set();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.js'))) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/'((?:process|nodejs)_[a-z_]+)'/g)) names.add(`${prefix}${m[1]}`);
  }
  return [...names];
}

// ---------------------------------------------------------------------------------------------
// Routes and paths

/** A route path in one form: parameters ({id}, :id, <id>, …, an empty segment) become {}; no trailing slash. */
function normalisePath(path) {
  const segments = path.split('/').slice(1);
  const normal = segments.map((segment, i) => (/^[:{<]|^…$/.test(segment) || (segment === '' && i < segments.length - 1) ? '{}' : segment));
  return `/${normal.join('/')}`.replace(/(.)\/$/, '$1');
}

function routeMatches(repo, method, docPath, { bare = false } = {}) {
  let path = docPath.split('?')[0];
  const suffix = path.startsWith('…');
  const prefix = path.endsWith('…');
  path = path.replace(/^…/, '').replace(/…$/, '');
  path = path.replace(/^\/v[12](?=\/|$)/, '') || '/';
  const wanted = normalisePath(path).split('/').slice(1);
  const starred = wanted[wanted.length - 1] === '*';
  const same = (a, b) => a === b || a === '{}' || b === '{}';
  return repo.routes.some((route) => {
    if (method && route.method !== method && !(method === 'HEAD' && route.method === 'GET')) return false;
    const have = route.path.split('/').slice(1);
    const wild = have[have.length - 1] === '*';
    const fixed = wild ? have.slice(0, -1) : have;
    if (suffix) {
      const tail = fixed.slice(-wanted.length);
      return tail.length === wanted.length && tail.every((s, i) => same(s, wanted[i]));
    }
    // `/health/*`, `/v2/admin/accounts…`, a bare `/health`: the start of routes.
    if (prefix || starred || bare) {
      const head = starred ? wanted.slice(0, -1) : wanted;
      return head.length <= fixed.length && head.every((s, i) => same(fixed[i], s));
    }
    if (wild) return wanted.length >= fixed.length && fixed.every((s, i) => same(s, wanted[i]));
    return fixed.length === wanted.length && fixed.every((s, i) => same(s, wanted[i]));
  });
}

function consolePageMatches(repo, docPath) {
  const segments = docPath.split('?')[0].split('/').filter(Boolean);
  if (segments.length === 0) return true; // the overview
  if (!repo.consolePages.sections.has(segments[0])) return false;
  return segments.slice(1).every((segment) => /^[{<:…]/.test(segment) || repo.consolePages.literals.has(segment));
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A glob or a path with <placeholders>, {a,b}, {param} or … as a regular expression over repository paths. */
function pathPattern(path) {
  let pattern = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (path.startsWith('**', i)) {
      pattern += '.*';
      i++;
    } else if (c === '*' || c === '…') pattern += '[^/]*';
    else if (c === '<' || c === '{') {
      const end = path.indexOf(c === '<' ? '>' : '}', i);
      const inner = path.slice(i + 1, end < 0 ? path.length : end);
      pattern += c === '{' && inner.includes(',') ? `(${inner.split(',').map(escape).join('|')})` : '[^/]+';
      i = end < 0 ? path.length : end;
    } else pattern += escape(c);
  }
  return new RegExp(`^${pattern}/?$`);
}

// ---------------------------------------------------------------------------------------------
// Markdown

/**
 * The inline code spans of a Markdown page with their line numbers (fenced blocks left out), and
 * the words of its fenced blocks marked `<!-- snippet: … -->`, which test/docs runs.
 */
function readPage(text) {
  const lines = text.split('\n');
  let fence = null;
  let snippet = false;
  let inSnippet = false;
  const snippetWords = new Set();
  const kept = lines.map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (marker && marker[1][0] === fence[0] && marker[1].length >= fence.length) fence = null;
      else if (inSnippet) for (const [word] of line.matchAll(/[A-Za-z_$][\w$]*/g)) snippetWords.add(word);
      return '';
    }
    if (marker) {
      fence = marker[1];
      inSnippet = snippet;
      snippet = false;
      return '';
    }
    if (/<!--\s*snippet:/.test(line)) snippet = true;
    else if (line.trim() !== '') snippet = false;
    return line;
  });
  const body = kept.join('\n');
  const spans = [];
  // A span: a run of backticks, then text (not across a blank line), then a run of the same length.
  let line = 1;
  let counted = 0;
  for (const m of body.matchAll(/(?<!`)(`+)(?!`)((?:(?!\n\s*\n)[\s\S])+?)(?<!`)\1(?!`)/g)) {
    for (; counted < m.index; counted++) if (body[counted] === '\n') line++;
    spans.push({ line, text: m[2].replace(/\s+/g, ' ').trim().replace(/\\\|/g, '|') });
  }
  return { spans, snippetWords };
}

// ---------------------------------------------------------------------------------------------
// Classification: a span gives [kind, reason] pairs, reason null when the name is there; none
// when no rule checks it.

function checkSpan(repo, page, text) {
  if (text === '' || !/[A-Za-z]/.test(text)) return [];
  if (ALLOWLIST.has(text) || ALLOWLIST.has(text.replace(/\(\)$/, ''))) return ok('allowlist');

  // Leading VAR=value assignments (shell, env files): each variable, then the command after them.
  const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)(?:\s+|$)/.exec(text);
  if (assignment) {
    const [whole, name, value] = assignment;
    // systemd's Environment=NAME=value; else a shell variable of an example (NEW=…, KEY=VALUE).
    if (!isEnvName(repo, name)) return /^[A-Z][A-Z0-9_]*=/.test(value) ? checkSpan(repo, page, value) : [];
    return [...checkEnv(repo, name), ...(/^[A-Z][A-Z0-9_]*=/.test(value) ? checkSpan(repo, page, value) : []), ...checkSpan(repo, page, text.slice(whole.length))];
  }

  const command = /^(?:sudo (?:-u \S+ )?)?(npx |node )?(rewards|npm|scripts\/\S+|\.\/\S+\.sh)(?: (.*))?$/.exec(text);
  if (command) return checkCommand(repo, page, command[2], command[3] ?? '', command[1]);

  const route = new RegExp(`^((?:${METHODS})(?:\\|(?:${METHODS}))*) ((?:/|…/)\\S*)`).exec(text);
  if (route) {
    return route[1]
      .split('|')
      .flatMap((method) => (routeMatches(repo, method, route[2]) ? ok('route') : stale('route', `no ${method} ${route[2].split('?')[0]} among the routes the service registers`)));
  }
  // A bare path: a route or a console page. A bare `…/tail` may be the tail of any URL (a
  // receiver's): only with a method is it taken for a route.
  if (/^\/\S*$/.test(text) && !SYSTEM_PATH.test(text)) {
    if (/^\/v[12]$/.test(text) || routeMatches(repo, undefined, text, { bare: true }) || consolePageMatches(repo, text)) return ok('route');
    return stale('route', 'no route of the service nor page of the console has this path');
  }

  // A call with arguments names its function: `claimDueJobs(db, {…})`, `dialectOf(db)` (not a
  // string literal's: another language's example, `implementation("…")`).
  const call = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\((?!["'])(.+)\)$/.exec(text);
  if (call) return checkSpan(repo, page, `${call[1]}()`);
  // A metric with its labels: `rewards_jobs_pending{kind}`.
  const metric = /^([a-z]\w*)\{[\w,]*\}$/.exec(text);
  if (metric) return checkIdentifier(repo, page, metric[1]);
  // An OAuth scope: `events:read`, `requests:*`.
  const scope = /^([a-z]+):([a-z]+|\*)$/.exec(text);
  if (scope) {
    if (!repo.code.includes(`'${scope[1]}:`)) return []; // not a family of scopes we have (host:port)
    return scope[2] === '*' || repo.code.includes(`'${text}'`) ? ok('scope') : stale('scope', 'no scope of this name in the code');
  }
  // An npm package: a dependency of package.json (or the console's).
  if (/^@[\w-]+\/[\w.-]+$/.test(text)) return repo.code.includes(`"${text}"`) ? ok('package') : stale('package', 'not a dependency in package.json');
  // A query string: each parameter's name is the code's.
  if (/^\?\w+=/.test(text)) {
    return [...text.slice(1).matchAll(/(?:^|&)(\w+)=/g)].flatMap(([, name]) => (repo.words.has(name) ? ok('identifier') : stale('identifier', `query parameter ${name} does not occur in the code`)));
  }
  // An option of a command (`--quick`, `--role worker`): the code defines it.
  const option = /^(--[a-z][\w-]*)(?:[ =]\S+)?$/.exec(text);
  if (option) return repo.code.includes(`${option[1]}`) ? ok('cli') : stale('cli', `no command of the repository has the option ${option[1]}`);
  if (/\s/.test(text)) return [];
  if (isPath(repo, text)) return checkPath(repo, page, text);
  return checkIdentifier(repo, page, text);
}

function isEnvName(repo, name) {
  return UPPER_SNAKE.test(name) || repo.configWords.has(name);
}

function checkEnv(repo, name) {
  if (ALLOWLIST.has(name)) return ok('allowlist');
  if (name.includes('*')) {
    const pattern = new RegExp(`^${name.split('*').map(escape).join('[A-Z0-9_]*')}$`);
    return [...repo.envWords].some((word) => pattern.test(word)) ? ok('env') : stale('env', 'no variable of this form is read in the code');
  }
  return repo.envWords.has(name) ? ok('env') : stale('env', 'not read anywhere in src/, scripts/, .ci/, bench/, chaos/, test/ or package.json');
}

function checkCommand(repo, page, program, rest, runner) {
  const words = rest.split(' ').filter((word) => word !== '');
  if (program === 'rewards') {
    const results = [];
    let group;
    let sub;
    for (let i = 0; i < words.length; i++) {
      const word = words[i];
      if (word.startsWith('-') || word.startsWith('[-')) {
        const option = word.replace(/^\[/, '').split('=')[0].replace(/\]$/, '');
        if (/^--[\w-]+$/.test(option)) results.push(...(repo.cli.options.has(option) ? ok('cli') : stale('cli', `rewards has no option ${option} (src/cli)`)));
        if (option === '--config') i++;
        continue;
      }
      if (!/^[a-z][\w-]*$/.test(word)) continue; // a value, a placeholder, an ellipsis
      if (group === undefined) {
        if (!repo.cli.commands.has(word)) return stale('cli', `rewards has no command "${word}" (src/cli)`);
        group = word;
        results.push(...ok('cli'));
      } else if (sub === undefined && repo.cli.commands.get(group).size > 0) {
        if (!repo.cli.commands.get(group).has(word)) return stale('cli', `rewards ${group} has no subcommand "${word}" (src/cli)`);
        sub = word;
      }
    }
    return results.length > 0 ? results : ok('cli');
  }
  if (runner === 'npx ') return []; // another package's command
  if (program === 'npm') {
    const [verb, name, ...after] = words;
    if (verb === 'run' || verb === 'run-script') {
      if (!name || name.startsWith('-')) return [];
      if (!repo.scripts.has(name)) return stale('cli', `package.json has no script "${name}"`);
      return [...ok('cli'), ...(name === 'bench' || name === 'chaos' ? checkOnly(repo, after) : [])];
    }
    if (verb === 'test' || verb === 'start') {
      if (!repo.scripts.has(verb)) return stale('cli', `package.json has no script "${verb}"`);
      const dashes = words.indexOf('--');
      if (verb !== 'test' || dashes < 0) return ok('cli');
      return words
        .slice(dashes + 1)
        .filter((filter) => !filter.startsWith('-'))
        .flatMap((filter) => (repo.testFiles.some((file) => file.includes(filter)) ? ok('cli') : stale('cli', `no test file matches "${filter}" (npm test -- FILTER)`)));
    }
    return []; // npm's own commands (ci, install, rebuild)
  }
  // A script of the repository, then perhaps the command it runs (scripts/with-node.sh 22 npm test).
  const inner = words.indexOf('npm');
  return [...checkPath(repo, page, program), ...(inner < 0 ? [] : checkCommand(repo, page, 'npm', words.slice(inner + 1).join(' ')))];
}

/** `-- --only a,b`: each a benchmark or chaos scenario the code names. */
function checkOnly(repo, words) {
  const only = words.indexOf('--only');
  if (only < 0 || !words[only + 1]) return [];
  return words[only + 1]
    .split(',')
    .flatMap((name) => ((name.includes('-') ? repo.dashed.has(name.toLowerCase()) : repo.words.has(name)) ? ok('cli') : stale('cli', `no scenario "${name}" in the code (--only)`)));
}

function isPath(repo, text) {
  if (text.includes('://') || /^(application|text|image|font|audio|video|multipart)\/[\w.+-]+/.test(text)) return false;
  if (/^[\d.:/a-f[\]]+$/i.test(text) && /\d/.test(text)) return false; // addresses, CIDR blocks
  if (text.startsWith('../') || SYSTEM_PATH.test(text) || /[~+=?&]/.test(text)) return false;
  const path = text.replace(/:\d+(-\d+)?$/, '');
  if (EXTENSION.test(path) && !/^\.[a-z0-9]+$/i.test(path)) return true;
  if (!path.includes('/')) return false;
  if (path.endsWith('/') || path.startsWith('./')) return true;
  const first = path.split('/')[0];
  return repo.dirs.has(first) || repo.files.has(first) || UPPER_SNAKE.test(first);
}

function checkPath(repo, page, text) {
  const path = text
    .replace(/:\d+(-\d+)?$/, '')
    .replace(/^\.\//, '')
    .replace(/(.)\/$/, '$1');
  const first = path.split('/')[0];
  // DATA_DIR/secret.key: a file in the directory a variable names.
  if (UPPER_SNAKE.test(first)) return checkEnv(repo, first);
  const bases = ['', 'src/', 'test/', 'docs/', page.dir ? `${page.dir}/` : ''];
  if (/[*…<{]/.test(path)) {
    const pattern = pathPattern(path);
    const found = repo.all.some((candidate) => bases.some((base) => candidate.startsWith(base) && pattern.test(candidate.slice(base.length))));
    return found ? ok('path') : stale('path', 'no file matches this pattern');
  }
  if (bases.some((base) => repo.files.has(base + path) || repo.dirs.has(base + path))) return ok('path');
  if (!path.includes('/')) {
    // A bare name: a file somewhere in the tree, or one the code writes or reads (its name is in the code).
    return repo.basenames.has(path) || repo.code.includes(path) ? ok('path') : stale('path', 'no such file in the repository, and the code does not name it');
  }
  // A file the service, the build or the tests write: in a directory .gitignore lists (data/…,
  // console/dist/…) and named in the code, or in a directory of the tree and named in the code
  // as a string of its own (test/durations.json: 'durations.json').
  const name = basename(path);
  if (repo.runtimeDirs.some((dir) => path.startsWith(`${dir}/`)) && repo.code.includes(name)) return ok('path');
  if (repo.dirs.has(dirname(path)) && (repo.code.includes(`'${name}'`) || repo.code.includes(`"${name}"`))) return ok('path');
  return stale('path', 'no such file or directory in the repository');
}

function checkIdentifier(repo, page, text) {
  const name = text.replace(/\(\)$/, '').replace(/\[[^\]]*\]/g, '');
  if (ALLOWLIST.has(name)) return ok('allowlist');
  const known = (word) => repo.words.has(word) || page.snippetWords.has(word);
  // Kebab-case (events, test ids, headers, scenarios): a string of the code, in any case, or composed
  // as the console composes test ids (`${prefix}next-page` with prefix="requests-", `${testid}-confirm`).
  if (/^[A-Za-z0-9]+(-[A-Za-z0-9]+)+$/.test(name)) {
    const lower = name.toLowerCase();
    const dashedOrWord = (part) => repo.dashed.has(part) || repo.words.has(part);
    const composed = () =>
      [...lower.matchAll(/-/g)].some(({ index }) => {
        const [left, right] = [lower.slice(0, index), lower.slice(index + 1)];
        return (dashedOrWord(left) && repo.composedSuffixes.has(right)) || (dashedOrWord(right) && repo.composedPrefixes.has(left));
      });
    return repo.dashed.has(lower) || composed() ? ok('identifier') : stale('identifier', 'does not occur in the code');
  }
  // `webhook-*`: a family of such names.
  if (/^[a-z0-9]+(-[a-z0-9]+)*-\*$/i.test(name)) {
    const stem = name.slice(0, -1).toLowerCase();
    return [...repo.dashed].some((word) => word.startsWith(stem)) ? ok('identifier') : stale('identifier', 'no name of the code has this form');
  }
  // A migration: `017_partitioned_delivery_log`.
  if (/^\d+_\w+$/.test(name)) return repo.dashed.has(name.toLowerCase()) ? ok('identifier') : stale('identifier', 'no file of this name');
  if (UPPER_SNAKE.test(name) || repo.configWords.has(name)) return checkEnv(repo, name);
  if (/^[A-Za-z_]\w*\*?$/.test(name) && repo.metrics.some((metric) => metric === name || (name.endsWith('*') && metric.startsWith(name.slice(0, -1))))) return ok('identifier');
  // Prefixes and suffixes of names: whsec_, rrs_cl_, bench_…, _pkey, rewards_job_*.
  const affix = /^(_?)([A-Za-z]\w*?)(_?)(…|\*)?$/.exec(name);
  if (affix && (affix[1] || affix[3] || affix[4])) {
    const [, before, stem, after] = affix;
    if (/^pg_/.test(stem)) return ok('postgres');
    const found = repo.wordList.some((word) => word !== stem && (before ? word.includes(`_${stem}${after}`) : word.startsWith(stem + after)));
    return found ? ok('identifier') : stale('identifier', 'no name of the code has this form');
  }
  if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(name)) return [];
  const parts = name.split('.');
  const postgres = (word) => /^pg_/.test(word) || POSTGRES_SETTINGS.has(word);
  if (parts.every(postgres)) return ok('postgres');
  const missing = parts.filter((part) => !known(part) && !postgres(part));
  if (missing.length === 0) return ok('identifier');
  return stale('identifier', parts.length === 1 ? 'does not occur in the code' : `${missing.join(', ')} does not occur in the code`);
}

// ---------------------------------------------------------------------------------------------

/** README.md and docs/*.md, relative to the root. */
function defaultFiles(root) {
  const docs = readdirSync(join(root, 'docs')).filter((file) => file.endsWith('.md'));
  return ['README.md', ...docs.sort().map((file) => `docs/${file}`)];
}

function classify(root, files) {
  const repo = repository(resolve(root));
  const results = [];
  for (const file of files) {
    const path = isAbsolute(file) ? file : join(repo.root, file);
    const inside = !relative(repo.root, path).startsWith('..');
    const shown = inside ? relative(repo.root, path) : file;
    const { spans, snippetWords } = readPage(readFileSync(path, 'utf8'));
    const page = { dir: inside ? relative(repo.root, dirname(path)) : '', snippetWords };
    for (const span of spans) results.push({ file: shown, line: span.line, name: span.text, results: checkSpan(repo, page, span.text) });
  }
  return results;
}

/**
 * The names of `files` (Markdown; relative to `root` or absolute) that the repository at `root` no
 * longer has: [{file, line, name, kind, reason}], in file and line order.
 */
export function staleNames(root, files = defaultFiles(root)) {
  return classify(root, files).flatMap(({ file, line, name, results }) => results.filter(([, reason]) => reason !== null).map(([kind, reason]) => ({ file, line, name, kind, reason })));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const args = process.argv.slice(2);
  const files = args.filter((arg) => !arg.startsWith('--'));
  if (args.includes('--unchecked')) {
    for (const { file, line, name, results } of classify(root, files.length > 0 ? files : defaultFiles(root))) {
      if (results.length === 0) console.log(`${file}:${line}\t${name}`);
    }
  } else {
    const found = staleNames(root, files.length > 0 ? files : undefined);
    let current;
    for (const { file, line, name, kind, reason } of found) {
      if (file !== current) console.log(`${current === undefined ? '' : '\n'}${file}`);
      current = file;
      console.log(`  ${file}:${line}  \`${name}\`  ${kind}: ${reason}`);
    }
    console.log(found.length === 0 ? 'No stale names in the docs.' : `\n${found.length} stale name${found.length === 1 ? '' : 's'} in the docs.`);
    process.exitCode = found.length === 0 ? 0 : 1;
  }
}
