import { join } from 'node:path';
import { describeLoad, freePort, interleavedLoads, ROOT_DIR, SERVER_CORE, startProcess, startRewards, token, type BenchOptions, type BenchRow } from './lib.js';

/**
 * Entry 1: the v2 token endpoint, an authenticated no-op (GET /v2/me) and GET /v2/subscriptions against a bare
 * Fastify hello-world measured in the same run. Goal: token endpoint ≥ 50 % of hello-world.
 */
export async function benchTokenEndpoint(options: BenchOptions): Promise<BenchRow[]> {
  // Both servers run side by side (an idle one costs nothing) and are measured in turns, each after a
  // warm-up: a cold process measures its JIT compiler, and a machine whose speed drifts during the
  // run would otherwise skew each ratio (see interleavedLoads).
  const schedule = options.quick ? { rounds: 2, seconds: 1, warmupSeconds: 1 } : { rounds: 5, seconds: 2, warmupSeconds: 3 };
  // Both servers share the server core (they are measured in turns); autocannon has the other.
  const hello = await startProcess(['--import', 'tsx', join(ROOT_DIR, 'bench/servers/hello.ts')], {}, '/', await freePort(), SERVER_CORE);
  const service = await startRewards({}, [], SERVER_CORE);
  try {
    const { client_id, client_secret } = service.operator;
    const bearer = await token(service.url, client_id, client_secret, 'subscriptions:read');
    const form = {
      method: 'POST' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id, client_secret, scope: 'requests:read' }).toString(),
    };
    const listCall = { method: 'GET' as const, path: '/v2/subscriptions', headers: { authorization: `Bearer ${bearer}` } };
    const results = await interleavedLoads(
      {
        hello: { url: `${hello.url}/` },
        // The same body as the token requests, to a bare Fastify route: what a form POST costs by itself.
        form: { url: `${hello.url}/form`, ...form },
        token: { url: `${service.url}/v2/oauth/token`, ...form },
        me: { url: `${service.url}/v2/me`, headers: { authorization: `Bearer ${bearer}` } },
        list: { url: `${service.url}/v2/subscriptions`, headers: { authorization: `Bearer ${bearer}` } },
        // A client that fetches a token before every call (a common integration), here before listing
        // its subscriptions: the same token request each time, which the endpoint answers from memory
        // within the second (RecentResponses). Its baseline adds a parameter that differs per request
        // (ignored by the grant, RFC 6749 §3.1), so nothing is remembered and everything else is alike.
        perCall: { url: service.url, requests: [{ path: '/v2/oauth/token', ...form }, listCall] },
        perCallUnremembered: { url: service.url, idReplacement: true, requests: [{ path: '/v2/oauth/token', ...form, body: `${form.body}&nonce=[<id>]` }, listCall] },
      },
      schedule,
    );
    const { hello: baseline, form: formBaseline, token: tokenResult, me: meResult, list: listResult, perCall, perCallUnremembered } = results;
    const phases = `${schedule.rounds} phases of ${schedule.seconds} s`;
    return [
      {
        entry: 'POST /v2/oauth/token',
        figure: `${describeLoad(tokenResult)} (${phases})`,
        baseline: `hello-world ${describeLoad(baseline)}`,
        ratio: tokenResult.rps / baseline.rps,
        goal: '≥ 0.50',
        met: tokenResult.rps / baseline.rps >= 0.5,
      },
      {
        entry: 'POST /v2/oauth/token, against a bare form POST',
        figure: describeLoad(tokenResult),
        baseline: `bare Fastify POST of the same form body ${describeLoad(formBaseline)}`,
        ratio: tokenResult.rps / formBaseline.rps,
      },
      { entry: 'GET /v2/me (bearer-verified no-op)', figure: describeLoad(meResult), baseline: `hello-world ${describeLoad(baseline)}`, ratio: meResult.rps / baseline.rps },
      {
        entry: 'GET /v2/subscriptions (authenticated list)',
        figure: describeLoad(listResult),
        baseline: `hello-world ${describeLoad(baseline)}`,
        ratio: listResult.rps / baseline.rps,
        goal: '≥ 0.50',
        met: listResult.rps / baseline.rps >= 0.5,
      },
      {
        entry: 'token before every call (POST /v2/oauth/token + GET /v2/subscriptions)',
        figure: describeLoad(perCall, 2),
        baseline: `the same, each token request made unique (nothing remembered) ${describeLoad(perCallUnremembered, 2)}`,
        ratio: perCall.rps / perCallUnremembered.rps,
      },
    ];
  } finally {
    await service.stop();
    await hello.stop();
  }
}
