// The direction of imports, checked by `npm test` (test/architecture.test.ts) with dependency-cruiser.
//
//   cli ─┐
//   app, server, deps (the composition root: builds every cache, queue and loop and passes them)
//        ├─> http ─────┐
//        └─> worker ───┼─> services ─> storage ─> domain
//                      └──────────────────────────> domain, net
//
// domain/ holds the rules and their types, and nothing else: no database, no network, no files, and
// not even the name of a stored row's type (storage maps its rows to the domain's types). HTTP
// routes reach the database only through a use case in services/. Only the composition root
// imports deps.ts: every other module declares the narrow interface it uses.
const root = '^src/(app|server|deps|ops-app)\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment: 'domain/ holds the rules and defines its own types: it reaches no database, HTTP, worker, service or composition root, type-only imports included',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: [`^src/(storage|http|worker|services|cli)/`, root, '^src/(metrics|logger)\\.ts$'] },
    },
    {
      name: 'domain-does-no-io',
      comment: 'domain/ reads no files and opens no connections: that is what services/ and storage/ are for',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['core'], path: '^(node:)?(fs|fs/promises|dns|dns/promises|net|tls|http|https|http2|child_process|worker_threads)$' },
    },
    {
      name: 'storage-is-below-services',
      comment: 'storage/ (tables, repositories, the queue) knows nothing of services, HTTP, the worker or the root',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: ['^src/(services|http|worker|cli)/', root] },
    },
    {
      name: 'services-are-below-http-and-worker',
      comment: 'services/ are the use cases HTTP routes, the CLI and the worker call; they call none of them',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: ['^src/(http|worker|cli)/', root] },
    },
    {
      name: 'routes-call-services',
      comment: 'HTTP reads and writes through the use cases in services/, never a repository, a table or the queue directly',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/storage/' },
    },
    {
      name: 'root-is-on-top',
      comment: 'only the composition root (and the CLI and server that start it) imports deps.ts; a module asks for the narrow interface it uses',
      severity: 'error',
      from: { path: '^src/(http|worker|services|storage|domain|net)/' },
      to: { path: root },
    },
    {
      name: 'http-and-worker-are-apart',
      comment: 'routes and the worker meet only in the queue (storage/queue) and the composition root',
      severity: 'error',
      from: { path: '^src/(http|worker)/' },
      to: { path: ['^src/(http|worker)/', '^src/cli/'], pathNot: '^src/$1/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle makes two modules one; split or invert one edge',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
