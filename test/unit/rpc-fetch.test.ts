// The JSON-RPC calls' HTTP (src/chain/rpc-fetch.ts) against a real HTTP server on this machine: the
// answer whole with its status and headers, one kept-alive connection for calls one after another, an
// abort that ends a hanging call, the size limit, and a port nobody listens on.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_ANSWER_BYTES, rpcFetch } from '../../src/chain/rpc-fetch.js';

describe('rpcFetch', () => {
  let server: http.Server;
  let url: string;
  let connections = 0;
  const bodies: string[] = [];

  before(async () => {
    server = http.createServer(async (req, res) => {
      let body = '';
      for await (const c of req) body += c;
      bodies.push(body);
      if (req.url === '/hang') return; // never answers
      if (req.url === '/busy') return void res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' }).end('{"error":"slow down"}');
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1024 * 1024, 0x61);
        for (let i = 0; i <= MAX_ANSWER_BYTES / chunk.length; i++) if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
        return void res.end();
      }
      // An answer in several writes, with a character split across two of them.
      const text = JSON.stringify({ jsonrpc: '2.0', id: 1, result: `é${'x'.repeat(100_000)}` });
      const bytes = Buffer.from(text);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(bytes.subarray(0, 35));
      res.end(bytes.subarray(35));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('sends the body and reads the whole answer; calls one after another share a connection', async () => {
    const before = connections;
    for (let i = 0; i < 3; i++) {
      const a = await rpcFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"call":${i}}` });
      assert.equal(a.status, 200);
      assert.equal(a.ok, true);
      assert.equal(a.headers.get('Content-Type'), 'application/json');
      const answer = JSON.parse(await a.text());
      assert.equal(answer.result.length, 100_001);
      assert.ok(answer.result.startsWith('éx'));
      assert.equal(bodies.at(-1), `{"call":${i}}`);
    }
    assert.equal(connections - before, 1, 'kept alive');
  });

  it('gives a refusal its status and headers', async () => {
    const a = await rpcFetch(`${url}/busy`, { method: 'POST', body: '{}' });
    assert.equal(a.ok, false);
    assert.equal(a.status, 429);
    assert.equal(a.headers.get('retry-after'), '7');
    assert.equal(await a.text(), '{"error":"slow down"}');
  });

  it('ends a call that hangs when its signal aborts, with the signal’s AbortError', async () => {
    const controller = new AbortController();
    const call = rpcFetch(`${url}/hang`, { method: 'POST', body: '{}', signal: controller.signal });
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    await assert.rejects(call, (err: Error) => err.name === 'AbortError');
    const aborted = AbortSignal.abort();
    await assert.rejects(rpcFetch(url, { body: '{}', signal: aborted }), (err: Error) => err.name === 'AbortError');
  });

  it(`refuses an answer over ${MAX_ANSWER_BYTES} bytes`, async () => {
    await assert.rejects(rpcFetch(`${url}/huge`, { method: 'POST', body: '{}' }), /over 10485760 bytes/);
  });

  it('fails a call to a port nobody listens on', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await assert.rejects(rpcFetch(`http://127.0.0.1:${port}`, { method: 'POST', body: '{}' }), /ECONNREFUSED/);
  });
});
