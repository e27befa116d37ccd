// The baseline for bench/http.ts: a bare Fastify process answering the routes the bench calls with the
// same JSON the service answers, with no database, auth or validation. PORT from the environment.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const asset = JSON.parse(process.env.BARE_ASSET_JSON ?? '{}');
app.post('/v1/asset', async (_req, reply) => reply.code(201).send({ success: true, data: { uid: '123456789012' } }));
app.get('/v1/asset/:uid', async () => ({ success: true, data: asset }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
