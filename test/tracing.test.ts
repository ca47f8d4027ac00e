// needs: database, every-node-line
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CONFIG_VARIABLES, loadConfig, tracesUrl } from '../src/config.js';
import type { JobWorker } from '../src/worker/job-worker.js';
import { startWorker } from '../src/worker/start-worker.js';
import { testDialects } from './support/databases.js';
import { tenantWithExperience } from './support/experiences.js';
import { eventually } from './support/notifications.js';
import { startHttpReceiver, type Receiver } from './support/receivers.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from './support/test-app.js';

// Traces of a reward request (docs/deployment.md, "Traces"): exported over OTLP/HTTP JSON by the
// OpenTelemetry SDK to a collector on loopback that decodes what it gets; and, off, nothing loaded
// and nothing stored.

/** A span as the collector decoded it from OTLP JSON. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const STATUS_ERROR = 2;

type OtlpValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
const valueOf = (value: OtlpValue): unknown => value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
const attributesOf = (list: Array<{ key: string; value: OtlpValue }> = []) => Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/** An OTLP/HTTP collector on loopback: POST /v1/traces with a JSON ExportTraceServiceRequest. */
async function startCollector() {
  const spans: ExportedSpan[] = [];
  const resources: Array<Record<string, unknown>> = [];
  const paths: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      paths.push(`${request.method} ${request.url} ${request.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ spans: Array<Omit<ExportedSpan, 'attributes'> & { attributes: [] }> }> }>;
      };
      for (const { resource, scopeSpans } of body.resourceSpans) {
        resources.push(attributesOf(resource.attributes));
        for (const { spans: list } of scopeSpans)
          for (const span of list) spans.push({ ...span, parentSpanId: span.parentSpanId ?? '', attributes: attributesOf(span.attributes), status: span.status ?? {} });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    resources,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the OTEL_* settings', () => {
  it('are off by default; the traces endpoint wins over the base one, which gets v1/traces; bad values stop the start', () => {
    assert.equal(tracesUrl(loadConfig({}).tracing), undefined);
    assert.equal(tracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing), 'http://collector:4318/v1/traces');
    assert.equal(tracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/in' }).tracing), 'https://c/in');
    assert.equal(tracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing), undefined);
    const withHeaders = loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s%3Dcret,X-Team=a', OTEL_EXPORTER_OTLP_ENDPOINT: 'https://user:pa55@collector:4318' });
    const config = withHeaders.tracing;
    assert.deepEqual(config.headers, { 'api-key': 's=cret', 'x-team': 'a' });
    // `rewards config show` names the headers, never their values, and masks a password in the URL.
    assert.equal(CONFIG_VARIABLES.OTEL_EXPORTER_OTLP_HEADERS!(withHeaders), 'api-key=****,x-team=****');
    assert.equal(CONFIG_VARIABLES.OTEL_EXPORTER_OTLP_ENDPOINT!(withHeaders), 'https://user:****@collector:4318/');
    assert.deepEqual([config.protocol, config.sampler, config.samplerRatio, config.serviceName], ['http/protobuf', 'parentbased_always_on', 1, 'rewards']);
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_SAMPLER: 'xray', OTEL_TRACES_SAMPLER_ARG: '2', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }),
      (error: Error) => ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER:', 'OTEL_TRACES_SAMPLER_ARG', 'OTEL_EXPORTER_OTLP_ENDPOINT'].every((name) => error.message.includes(name)),
    );
  });

  it('off, the service loads no OpenTelemetry SDK module; on, it does', async () => {
    // A child process imports what `rewards serve` imports and starts tracing as it does, then lists
    // the OpenTelemetry packages Node loaded. prom-client loads @opentelemetry/api by itself (a
    // no-op API), so only that one may be there while traces are off.
    const child = async (env: Record<string, string>) => {
      const script = `
        import { createRequire } from 'node:module';
        import { pino } from 'pino';
        await import('./src/server.ts'); await import('./src/app.ts'); await import('./src/worker/start-worker.ts');
        const { loadConfig } = await import('./src/config.ts');
        const { startTracing } = await import('./src/tracing.ts');
        const tracing = await startTracing(loadConfig(${JSON.stringify(env)}).tracing, pino({ level: 'silent' }));
        const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('/node_modules/@opentelemetry/')).map((path) => path.split('/node_modules/')[1].split('/').slice(0, 2).join('/'));
        process.stdout.write(JSON.stringify({ on: tracing !== undefined, packages: [...new Set(loaded)].sort() }));
        await tracing?.shutdown();`;
      const run = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      run.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      run.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await new Promise((resolve) => run.on('close', resolve));
      assert.equal(code, 0, err);
      return JSON.parse(out) as { on: boolean; packages: string[] };
    };
    const [off, on] = await Promise.all([child({}), child({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })]);
    assert.equal(off.on, false);
    assert.ok(
      off.packages.every((name) => name === '@opentelemetry/api'),
      off.packages.join(),
    );
    assert.equal(on.on, true);
    for (const name of ['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-proto']) assert.ok(on.packages.includes(name), on.packages.join());
  });
});

for (const dialect of testDialects()) {
  describe(`traces of a reward request [${dialect}]`, () => {
    let collector: Awaited<ReturnType<typeof startCollector>>;
    let t: TestApp;
    let receiver: Receiver;
    let worker: JobWorker | undefined;

    before(async () => {
      collector = await startCollector();
      t = await startTestApp(dialect, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'rewards-under-test',
        RETRY_INTERVAL: '50ms',
        RETRY_MAX_ATTEMPTS: '3',
      });
      // registered-requests: 204 at once; processed-requests: 503, then 204 (per request).
      const processedCalls = new Map<string, number>();
      receiver = await startHttpReceiver((request) => {
        if (!request.path.startsWith('/processed')) return { status: 204 };
        const id = (JSON.parse(request.body) as { id: string }).id;
        processedCalls.set(id, (processedCalls.get(id) ?? 0) + 1);
        return { status: processedCalls.get(id) === 1 ? 503 : 204 };
      });
    });
    after(async () => {
      await worker?.stop();
      await receiver.close();
      await t.close();
      await collector.close();
    });

    it('one trace per request: the API call, its registration and processing, and every delivery attempt, linked parent to child, with no secret', async () => {
      assert.ok(t.deps.tracing, 'traces are on');
      const { client, token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] });
      const subscribe = async (event: string, path: string, bearer: string) => {
        const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event, callback: { url: `${receiver.url}${path}?tenant=acme`, authorization: { Bearer: bearer } } } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        return created.body.secret as string;
      };
      const secrets = [await subscribe('registered-requests', '/registered', 'receiver-token-registered'), await subscribe('processed-requests', '/processed', 'receiver-token-processed')];

      // Two requests accepted before the worker runs, so one batch registers both: the first joins
      // the caller's trace, the second begins one of its own.
      const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const callerSpan = '00f067aa0ba902b7';
      const send = async (headers: Record<string, string>) => {
        const response = await api(t.url, 'POST', '/v2/requests', { token, headers, body: { experience: 'summer', event: 'purchase', data: { orderId: 'o-1' } } });
        assert.equal(response.status, 202, JSON.stringify(response.body));
        return response.body.id as string;
      };
      const traced = await send({ traceparent: `00-${callerTrace}-${callerSpan}-01` });
      const untraced = await send({});
      const jobs = await t.deps.db.selectFrom('jobs').select(['payload']).execute();
      for (const job of jobs) assert.match(JSON.parse(job.payload).traceParent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'the registration job carries the API span');

      worker = startWorker(t.deps, { pollIntervalMs: 25 });
      const notifications = await eventually(
        async () => {
          const rows = await t.deps.db.selectFrom('notifications').select(['id', 'request_id', 'event', 'status', 'trace_parent']).where('request_id', 'in', [traced, untraced]).execute();
          return rows.length === 4 && rows.every((row) => row.status === 'succeeded') && rows;
        },
        15_000,
        'every notification delivered',
      );
      assert.equal(receiver.requests.length, 6, 'each registered-requests once, each processed-requests twice');
      assert.ok(
        receiver.requests.every((request) => request.headers.traceparent === undefined && request.headers.tracestate === undefined),
        'receivers get no trace context',
      );
      await t.deps.tracing.flush();
      const spans = collector.spans;
      assert.ok(
        collector.paths.every((path) => path === 'POST /v1/traces application/json'),
        collector.paths.join(),
      );
      assert.ok(collector.resources.every((resource) => resource['service.name'] === 'rewards-under-test'));

      const traceOf = (requestId: string) => {
        const server = spans.find((span) => span.kind === SERVER && span.attributes['rewards.request.id'] === requestId);
        assert.ok(server, `the server span of ${requestId}`);
        return { server, all: spans.filter((span) => span.traceId === server.traceId) };
      };
      const ofName = (all: ExportedSpan[], name: string) => all.filter((span) => span.name === name);

      for (const requestId of [traced, untraced]) {
        const { server, all } = traceOf(requestId);
        if (requestId === traced) {
          assert.equal(server.traceId, callerTrace, "the caller's trace");
          assert.equal(server.parentSpanId, callerSpan, "the caller's span is the parent");
        } else {
          assert.notEqual(server.traceId, callerTrace);
          assert.equal(server.parentSpanId, '', 'a trace of its own');
        }
        assert.equal(server.name, 'POST /v2/requests');
        assert.deepEqual(
          [server.attributes['http.request.method'], server.attributes['http.route'], server.attributes['http.response.status_code'], server.attributes['rewards.account.id']],
          ['POST', '/v2/requests', 202, client.accountId],
        );

        const [registration, ...moreRegistrations] = ofName(all, 'register request');
        assert.ok(registration && moreRegistrations.length === 0, 'one registration span');
        assert.equal(registration.kind, INTERNAL);
        assert.equal(registration.parentSpanId, server.spanId, 'registration under the API call');
        assert.deepEqual(
          [registration.attributes['rewards.request.id'], registration.attributes['rewards.request.outcome'], registration.attributes['rewards.batch.size']],
          [requestId, 'registered', 2],
        );
        const [processing, ...moreProcessing] = ofName(all, 'process request');
        assert.ok(processing && moreProcessing.length === 0, 'one processing span');
        assert.equal(processing.parentSpanId, registration.spanId, 'processing under the registration');
        assert.equal(processing.attributes['rewards.request.outcome'], 'processed');

        const registeredAttempts = ofName(all, 'deliver registered-requests');
        assert.equal(registeredAttempts.length, 1);
        const processedAttempts = ofName(all, 'deliver processed-requests').sort((a, b) => Number(a.attributes['rewards.webhook.attempt']) - Number(b.attributes['rewards.webhook.attempt']));
        assert.equal(processedAttempts.length, 2);
        const notificationOf = (event: string) => notifications.find((row) => row.request_id === requestId && row.event === event)!;
        for (const [attempt, parent, event, number, status, outcome] of [
          [registeredAttempts[0]!, registration, 'registered-requests', 1, 204, 'succeeded'],
          [processedAttempts[0]!, processing, 'processed-requests', 1, 503, 'retry'],
          [processedAttempts[1]!, processing, 'processed-requests', 2, 204, 'succeeded'],
        ] as const) {
          assert.equal(attempt.kind, CLIENT);
          assert.equal(attempt.parentSpanId, parent.spanId, `${event} attempt ${number} under its request's ${parent.name}`);
          assert.equal(notificationOf(event).trace_parent, `00-${parent.traceId}-${parent.spanId}-01`, 'the notification row carries its parent');
          assert.deepEqual(
            {
              event: attempt.attributes['rewards.webhook.event'],
              id: attempt.attributes['rewards.webhook.id'],
              number: attempt.attributes['rewards.webhook.attempt'],
              host: attempt.attributes['server.address'],
              port: attempt.attributes['server.port'],
              status: attempt.attributes['http.response.status_code'],
              outcome: attempt.attributes['rewards.webhook.outcome'],
            },
            { event, id: notificationOf(event).id, number, host: '127.0.0.1', port: receiver.port, status, outcome },
          );
          if (status === 503) {
            assert.equal(attempt.status.code, STATUS_ERROR);
            assert.equal(attempt.attributes['error.type'], '503');
          } else assert.notEqual(attempt.status.code, STATUS_ERROR);
        }
        assert.equal(all.length, 6, all.map((span) => span.name).join());
      }

      // No secret, credential, header value, URL path or query, or payload anywhere in what was exported.
      const forbidden = [...secrets, client.clientSecret, token, 'receiver-token-registered', 'receiver-token-processed', 'tenant=acme', '/registered', '/processed', 'o-1', 'purchase'];
      const exported = JSON.stringify({ spans, resources: collector.resources });
      for (const value of forbidden) assert.ok(!exported.includes(value), `"${value}" was exported`);
      for (const span of spans)
        for (const [key, value] of Object.entries(span.attributes)) assert.ok(!/authorization|secret|token/i.test(key) && !forbidden.some((f) => String(value).includes(f)), key);
    });
  });

  describe(`traces off [${dialect}]`, () => {
    let t: TestApp;
    let receiver: Receiver;
    let client: ClientCredentials;
    before(async () => {
      t = await startTestApp(dialect);
      receiver = await startHttpReceiver();
    });
    after(async () => {
      await receiver.close();
      await t.close();
    });

    it('stores no trace context: the jobs carry the request id alone, the notifications no traceparent, whatever the caller sent', async () => {
      assert.equal(t.deps.tracing, undefined);
      let token: string;
      ({ client, token } = await tenantWithExperience(t, { prizes: [{ id: 'cpn', value: 10, stock: null }] }));
      assert.equal((await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-requests', callback: { url: `${receiver.url}/hook` } } })).status, 201);
      const response = await api(t.url, 'POST', '/v2/requests', { token, headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, body: { experience: 'summer' } });
      assert.equal(response.status, 202);
      const jobs = await t.deps.db.selectFrom('jobs').select(['payload']).execute();
      assert.deepEqual(
        jobs.map((job) => JSON.parse(job.payload)),
        [{ requestId: response.body.id }],
      );
      const worker = startWorker(t.deps, { pollIntervalMs: 25 });
      try {
        await eventually(() => receiver.requests.length === 1, 15_000, 'the webhook');
        assert.equal(receiver.requests[0]!.headers.traceparent, undefined, 'receivers never get a traceparent');
        const rows = await t.deps.db.selectFrom('notifications').select(['trace_parent']).where('account_id', '=', client.accountId).execute();
        assert.deepEqual(rows, [{ trace_parent: null }]);
      } finally {
        await worker.stop();
      }
    });
  });
}
