// The baselines: a bare Fastify hello-world, started in the same run as the service it is compared to,
// and a bare Fastify POST that parses the same form body as the token endpoint and answers a body of
// a token response's size (the cost of a form POST itself, without any token logic).
import Fastify from 'fastify';
import formbody from '@fastify/formbody';

const app = Fastify({ logger: false });
await app.register(formbody);
app.get('/', async () => ({ hello: 'world' }));
app.post('/form', async (request) => ({ access_token: 'x'.repeat(600), token_type: 'Bearer', expires_in: 3600, scope: (request.body as { scope?: string }).scope }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
