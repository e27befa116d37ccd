// The failover transport against small JSON-RPC servers on this machine that answer as the test says
// (the code under test talks HTTP to them, as it does to a hosted provider).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { createPublicClient, keccak256, type Hex } from 'viem';
import { classifyProviderError, mergeSnapshots, ProviderSet, redactRpcUrl, retryAfterMs, type ProviderSnapshot } from '../../src/chain/providers.js';
import { isChainUnreachable } from '../../src/chain/unreachable.js';

type Reply = { status?: number; headers?: Record<string, string>; body?: unknown; hang?: boolean; drop?: boolean };
type Handler = (method: string, params: unknown[]) => Reply | Promise<Reply>;

const servers: http.Server[] = [];
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A JSON-RPC server whose answers `handler` decides; counts the calls it got by method. */
async function rpcServer(handler: Handler): Promise<{ url: string; calls: string[] }> {
  const calls: string[] = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const { id, method, params } = JSON.parse(text);
    calls.push(method);
    const r = await handler(method, params ?? []);
    if (r.hang) return; // never answers
    if (r.drop) return void req.socket.destroy();
    res.writeHead(r.status ?? 200, { 'content-type': typeof r.body === 'string' ? 'text/plain' : 'application/json', ...(r.headers ?? {}) });
    res.end(typeof r.body === 'string' ? r.body : JSON.stringify({ jsonrpc: '2.0', id, ...(r.body as object) }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v2/secret-key`, calls };
}

const result = (v: unknown): Reply => ({ body: { result: v } });
const deadUrl = 'http://127.0.0.1:9/'; // discard port: refused
// Long enough for a local server on a busy machine to answer; the hanging one costs a test this long.
const opts = { timeoutMs: 1500, retryCount: 0 };

// The tests share nothing but the servers' list and mostly wait on timeouts and Retry-After: side by side
// they take as long as the longest instead of the sum.
describe('failover JSON-RPC transport', { concurrency: true }, () => {
  it('hides paths and credentials of provider URLs', () => {
    assert.equal(redactRpcUrl('https://polygon-amoy.g.alchemy.com/v2/abcdef'), 'https://polygon-amoy.g.alchemy.com/…');
    assert.equal(redactRpcUrl('http://127.0.0.1:8545'), 'http://127.0.0.1:8545');
    assert.equal(redactRpcUrl('https://user:pw@rpc.example/'), 'https://rpc.example/…');
    const set = new ProviderSet(1, ['https://a.example/k1', 'https://a.example/k2']);
    assert.deepEqual(
      set.snapshot().map((s) => s.provider),
      ['https://a.example/…#1', 'https://a.example/…#2'],
    );
  });

  it('reads Retry-After as seconds or a date, bounded', () => {
    assert.equal(retryAfterMs('3'), 3000);
    assert.equal(retryAfterMs(null), 1000);
    assert.equal(retryAfterMs('99999'), 120_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000);
  });

  it('fails over on a refused connection, a 5xx and a timeout, and marks the provider', async () => {
    const good = await rpcServer(() => result('0x10'));
    const busy = await rpcServer(() => ({ status: 503, body: 'overloaded' }));
    const slow = await rpcServer(() => ({ hang: true }));
    const changes: string[] = [];
    // The hanging one before the 5xx one: the 5xx provider's first backoff (1 s) must outlast the next call.
    const set = new ProviderSet(5, [deadUrl, slow.url, busy.url, good.url], { onStateChange: (p) => changes.push(`${p.index}:${p.state}`) });
    assert.equal(await set.request({ method: 'eth_blockNumber' }, opts), '0x10');
    const s = set.snapshot();
    assert.deepEqual(
      s.map((p) => p.state),
      ['degraded', 'degraded', 'degraded', 'up'],
    );
    assert.equal(s[0].errors.connection, 1);
    assert.equal(s[1].errors.timeout, 1);
    assert.equal(s[2].errors.http_5xx, 1);
    assert.deepEqual(changes, ['0:degraded', '1:degraded', '2:degraded']);
    // The failed ones are avoided while they back off: the next call goes straight to the good one.
    const before = good.calls.length;
    await set.request({ method: 'eth_blockNumber' }, opts);
    assert.equal(good.calls.length, before + 1);
    assert.equal(busy.calls.length, 1, 'the 5xx provider was not called again during its backoff');
  });

  it('a 429 is not called again before its Retry-After; other providers take the calls', async () => {
    let limited = true;
    const a = await rpcServer(() =>
      limited ? { status: 429, headers: { 'retry-after': '1' }, body: { error: { code: 429, message: 'Too Many Requests' } } } : result('0xa'),
    );
    const b = await rpcServer(() => result('0xb'));
    const set = new ProviderSet(5, [a.url, b.url]);
    assert.equal(await set.request({ method: 'eth_chainId' }, opts), '0xb');
    const snap = set.snapshot()[0];
    assert.equal(snap.state, 'rate_limited');
    assert.equal(snap.errors.http_429, 1);
    assert.ok(snap.retry_at! - Date.now() > 500, 'retry_at about a second away');
    for (let i = 0; i < 5; i++) assert.equal(await set.request({ method: 'eth_chainId' }, opts), '0xb');
    assert.equal(a.calls.length, 1, 'not called before Retry-After');
    limited = false;
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal(await set.request({ method: 'eth_chainId' }, opts), '0xa', 'the primary again once its Retry-After passed');
    assert.equal(set.snapshot()[0].state, 'up');
  });

  it('a single rate-limited provider is waited for within the call time', async () => {
    let n = 0;
    const a = await rpcServer(() => (n++ === 0 ? { status: 429, headers: { 'retry-after': '0.2' }, body: 'slow down' } : result('0x1')));
    const set = new ProviderSet(5, [a.url]);
    const t0 = Date.now();
    assert.equal(await set.request({ method: 'eth_chainId' }, { timeoutMs: 1000, retryCount: 1 }), '0x1');
    assert.ok(Date.now() - t0 >= 180, 'waited for Retry-After');
  });

  it('a node error is the answer: no failover, the provider stays up', async () => {
    const a = await rpcServer(() => ({ body: { error: { code: -32000, message: 'nonce too low' } } }));
    const b = await rpcServer(() => result('0xb'));
    const set = new ProviderSet(5, [a.url, b.url]);
    await assert.rejects(set.request({ method: 'eth_sendRawTransaction', params: ['0x02'] }, opts), /nonce too low/);
    assert.equal(b.calls.length, 0);
    assert.equal(set.snapshot()[0].state, 'up');
  });

  it('all providers failing is "chain unreachable" (jobs wait without spending attempts)', async () => {
    const set = new ProviderSet(5, [deadUrl, 'http://127.0.0.1:1/']);
    const client = createPublicClient({ transport: set.transport({ timeoutMs: 1500, retryCount: 1 }) });
    const err = await client.getBlockNumber().catch((e) => e);
    assert.ok(isChainUnreachable(err), `unreachable: ${err}`);
    assert.equal(set.snapshot()[0].errors.connection, 2, 'tried in both rounds');
  });

  it('a lost eth_sendRawTransaction answer is resolved by the hash on the next provider, never sent as something else', async () => {
    const raw: Hex =
      '0x02f86b827a6980843b9aca00850ba43b740083030d4094000000000000000000000000000000000000beef8080c001a0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
    const hash = keccak256(raw);
    const sent: unknown[] = [];
    const a = await rpcServer((method, params) => {
      if (method === 'eth_sendRawTransaction') sent.push(params[0]);
      return { drop: true }; // takes it, the answer never comes
    });
    const b = await rpcServer((method, params) => (method === 'eth_getTransactionByHash' && params[0] === hash ? result({ hash }) : result(null)));
    const set = new ProviderSet(5, [a.url, b.url]);
    assert.equal(await set.request({ method: 'eth_sendRawTransaction', params: [raw] }, opts), hash);
    assert.deepEqual(sent, [raw]);
    assert.deepEqual(b.calls, ['eth_getTransactionByHash'], 'looked up by hash, not sent again');

    // A node that does not know it yet gets the same bytes; its "already known" is the hash too.
    const c = await rpcServer((method) =>
      method === 'eth_sendRawTransaction' ? { body: { error: { code: -32000, message: 'already known' } } } : result(null),
    );
    const set2 = new ProviderSet(5, [a.url, c.url]);
    assert.equal(await set2.request({ method: 'eth_sendRawTransaction', params: [raw] }, opts), hash);
    assert.deepEqual(c.calls, ['eth_getTransactionByHash', 'eth_sendRawTransaction']);
  });

  it('asks every provider on its own (the chain id each serves), null where one does not answer', async () => {
    const a = await rpcServer(() => result('0x13882'));
    const b = await rpcServer(() => result('0x89'));
    const set = new ProviderSet(80002, [a.url, deadUrl, b.url]);
    const answers = await set.onEach({ method: 'eth_chainId' }, opts.timeoutMs);
    assert.deepEqual(
      answers.map((x) => x.result),
      ['0x13882', null, '0x89'],
    );
    assert.equal(set.snapshot()[1].state, 'degraded');
  });

  it('errors name the provider without its path (where hosted providers keep the API key)', async () => {
    const busy = await rpcServer(() => ({ status: 503, body: 'overloaded' }));
    const slow = await rpcServer(() => ({ hang: true }));
    const node = await rpcServer(() => ({ body: { error: { code: 3, message: 'execution reverted', data: '0x08c379a0' } } }));
    for (const url of [busy.url, slow.url, node.url]) {
      const err = await new ProviderSet(5, [url]).request({ method: 'eth_call', params: [] }, opts).catch((e) => e);
      assert.ok(err instanceof Error);
      assert.doesNotMatch(`${err.message} ${JSON.stringify(err)}`, /secret-key/, err.message);
      assert.match(err.message, /127\.0\.0\.1:\d+\/…/);
    }
    const reverted = (await new ProviderSet(5, [node.url]).request({ method: 'eth_call', params: [] }, opts).catch((e) => e)) as {
      code: number;
      cause: { data: string };
    };
    assert.equal(reverted.code, 3, "the node's error code and data are kept");
    assert.equal(reverted.cause.data, '0x08c379a0');
  });

  it('classifies errors: node answers are not provider failures', () => {
    assert.equal(classifyProviderError(new Error('x'))?.kind, 'connection');
  });

  it('merges the snapshots of two threads: counts add up, the newer state wins', () => {
    const base: ProviderSnapshot = {
      chain_id: 1,
      index: 0,
      provider: 'p',
      state: 'up',
      calls: 3,
      errors: { timeout: 1, connection: 0, http_429: 0, http_5xx: 0, http_other: 0 },
      latency_sum_ms: 30,
      latency_count: 3,
      last_error: null,
      since: null,
      last_call_at: 100,
      retry_at: null,
    };
    const other: ProviderSnapshot = {
      ...base,
      state: 'down',
      calls: 5,
      errors: { ...base.errors, connection: 4 },
      last_error: 'connection: refused',
      last_call_at: 200,
    };
    const [m] = mergeSnapshots([base], [other]);
    assert.equal(m.calls, 8);
    assert.equal(m.errors.timeout, 2);
    assert.equal(m.errors.connection, 4);
    assert.equal(m.state, 'down');
    assert.equal(m.latency_count, 6);
  });
});
