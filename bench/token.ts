import { join } from 'node:path';
import { describeLoad, freePort, load, loadSeconds, warmupSeconds, ROOT_DIR, startProcess, startRewards, token, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry 1: the v2 token endpoint, an authenticated no-op (GET /v2/me) and GET /v2/subscriptions against a bare
 * Fastify hello-world measured in the same run. Goal: token endpoint ≥ 50 % of hello-world.
 */
export async function benchTokenEndpoint(options: BenchOptions): Promise<BenchRow[]> {
  const duration = loadSeconds(options);
  // Each target is warmed up with the same load first: a cold process measures its JIT compiler, not its steady state.
  const warm = warmupSeconds(options);
  const hello = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/hello.ts')], {}, '/', await freePort());
  const baseline = await load({ url: `${hello.url}/`, duration, warmupSeconds: warm });
  const formPost = (url: string, client_id: string, client_secret: string) =>
    load({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id, client_secret, scope: 'requests:read' }).toString(),
      duration,
      warmupSeconds: warm,
    });
  const service = await startRewards();
  const { client_id, client_secret } = service.operator;
  // The same body as the token requests below, to a bare Fastify route (the cost of a form POST itself).
  const formBaseline = await formPost(`${hello.url}/form`, client_id, client_secret);
  await hello.stop();

  try {
    const tokenResult = await formPost(`${service.url}/v2/oauth/token`, client_id, client_secret);
    const bearer = await token(service.url, client_id, client_secret, 'subscriptions:read');
    const meResult = await load({ url: `${service.url}/v2/me`, headers: { authorization: `Bearer ${bearer}` }, duration, warmupSeconds: warm });
    const listResult = await load({ url: `${service.url}/v2/subscriptions`, headers: { authorization: `Bearer ${bearer}` }, duration, warmupSeconds: warm });
    const rows: BenchRow[] = [
      { entry: 'POST /v2/oauth/token', figure: describeLoad(tokenResult), baseline: `hello-world ${describeLoad(baseline)}`, ratio: tokenResult.rps / baseline.rps, goal: '≥ 0.50', met: tokenResult.rps / baseline.rps >= 0.5 },
      { entry: 'POST /v2/oauth/token, against a bare form POST', figure: describeLoad(tokenResult), baseline: `bare Fastify POST of the same form body ${describeLoad(formBaseline)}`, ratio: tokenResult.rps / formBaseline.rps },
      { entry: 'GET /v2/me (bearer-verified no-op)', figure: describeLoad(meResult), baseline: `hello-world ${describeLoad(baseline)}`, ratio: meResult.rps / baseline.rps },
      { entry: 'GET /v2/subscriptions (authenticated list)', figure: describeLoad(listResult), baseline: `hello-world ${describeLoad(baseline)}`, ratio: listResult.rps / baseline.rps, goal: '≥ 0.50', met: listResult.rps / baseline.rps >= 0.5 },
    ];
    return rows;
  } finally {
    await service.stop();
  }
}
