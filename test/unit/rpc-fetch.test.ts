// The JSON-RPC calls' HTTP (src/chain/rpc-fetch.ts) against a real HTTP server on this machine: the
// answer whole with its status and headers, one kept-alive connection for calls one after another, a
// call sent again when its kept-alive connection is closed under it, an abort that ends a hanging
// call, the size limit, and a port nobody listens on.
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

  it('sends a call once more on a new connection when a kept-alive one is closed as it is reused, never twice', async () => {
    // A server that closes each connection at its second request, as one closing an idle connection
    // just as the client reuses it; `always` closes at the first too.
    let always = false;
    const seen: string[] = [];
    const closing = http.createServer(async (req, res) => {
      let body = '';
      for await (const c of req) body += c;
      const socket = req.socket as typeof req.socket & { calls?: number };
      socket.calls = (socket.calls ?? 0) + 1;
      seen.push(`${body}#${socket.calls}`);
      if (always || socket.calls === 2) return void socket.destroy();
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => closing.listen(0, '127.0.0.1', r));
    const at = `http://127.0.0.1:${(closing.address() as AddressInfo).port}`;
    try {
      assert.equal(await (await rpcFetch(at, { method: 'POST', body: 'a' })).text(), '{"ok":true}');
      assert.equal(await (await rpcFetch(at, { method: 'POST', body: 'b' })).text(), '{"ok":true}', 'sent again');
      assert.deepEqual(seen, ['a#1', 'b#2', 'b#1']);
      always = true;
      seen.length = 0;
      await assert.rejects(rpcFetch(at, { method: 'POST', body: 'c' }), /ECONNRESET|socket hang up/);
      assert.equal(seen.length, 2, 'on a reused connection, then once on a new one, and no more');
    } finally {
      closing.closeAllConnections();
      await new Promise((r) => closing.close(r));
    }
  });

  it('fails a call to a port nobody listens on', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await assert.rejects(rpcFetch(`http://127.0.0.1:${port}`, { method: 'POST', body: '{}' }), /ECONNREFUSED/);
  });
});
