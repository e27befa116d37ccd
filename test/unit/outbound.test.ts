// The SSRF guard (src/net/outbound.ts): the pure address rules, the URL check, and real requests to a
// local server, including redirects and DNS answers that change between a check and the connect.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertAllowedUrl, isForbiddenAddress, OutboundBlockedError, outboundRequest, outboundTestHooks, type OutboundPolicy } from '../../src/net/outbound.js';
import { redactUrl } from '../../src/net/redact-url.js';

const STRICT: OutboundPolicy = { allowPrivate: false };
const OPEN: OutboundPolicy = { allowPrivate: true };

describe('isForbiddenAddress', () => {
  const forbidden: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['10.0.0.1', /private/],
    ['172.16.0.0', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['169.254.169.254', /link-local/],
    ['100.64.0.1', /CGNAT/],
    ['100.127.255.255', /CGNAT/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /reserved/],
    ['192.0.0.8', /reserved/],
    ['192.0.2.1', /documentation/],
    ['198.18.0.1', /benchmarking/],
    ['198.19.255.255', /benchmarking/],
    ['198.51.100.7', /documentation/],
    ['203.0.113.9', /documentation/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.255', /broadcast/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['::ffff:127.0.0.1', /loopback/], // IPv4-mapped, dotted
    ['::ffff:7f00:1', /loopback/], // IPv4-mapped, hex
    ['::ffff:169.254.169.254', /link-local/],
    ['::ffff:10.1.2.3', /private/],
    ['::127.0.0.1', /reserved/], // deprecated IPv4-compatible
    ['64:ff9b::127.0.0.1', /loopback/], // NAT64 of a loopback address
    ['64:ff9b::a00:1', /private/], // NAT64 of 10.0.0.1
    ['64:ff9b:1::1', /reserved/], // local-use NAT64
    ['2002:7f00:1::1', /loopback/], // 6to4 embedding 127.0.0.1
    ['2002:c0a8:0101::', /private/], // 6to4 embedding 192.168.1.1
    ['2002:a9fe:a9fe::1', /link-local/], // 6to4 embedding 169.254.169.254
    ['fc00::1', /private/],
    ['fd12:3456:789a::1', /private/],
    ['fe80::1', /link-local/],
    ['fe80::1%eth0', /link-local/],
    ['febf:ffff::1', /link-local/],
    ['fec0::1', /private/],
    ['ff02::1', /multicast/],
    ['2001:db8::1', /documentation/],
    ['2001::1', /reserved/], // Teredo
    ['100::1', /reserved/], // discard-only
    ['not-an-ip', /not an IP/],
  ];
  for (const [ip, reason] of forbidden) {
    it(`forbids ${ip}`, () => {
      const r = isForbiddenAddress(ip);
      assert.ok(r, `${ip} should be forbidden`);
      assert.match(r, reason);
    });
  }
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:82b::200e',
    '64:ff9b::808:808',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
    '::ffff:8.8.8.8',
  ];
  for (const ip of allowed) {
    it(`allows ${ip}`, () => assert.equal(isForbiddenAddress(ip), null));
  }
});

describe('assertAllowedUrl', () => {
  afterEach(() => {
    outboundTestHooks.resolve = null;
    outboundTestHooks.allowAddress = null;
  });

  const blocked: [string, RegExp][] = [
    ['http://127.0.0.1/', /loopback/],
    ['http://10.0.0.1/', /private/],
    ['http://[::1]/', /loopback/],
    ['http://0x7f000001/', /loopback/], // WHATWG URL: 127.0.0.1
    ['http://2130706433/', /loopback/],
    ['http://0177.0.0.1/', /loopback/],
    ['http://127.1/', /loopback/],
    ['http://127.0.0.1./', /loopback/],
    ['http://0x7f.1/', /loopback/],
    ['http://\u2460\u2461\u2466.0.0.1/', /loopback/], // circled digits ①②⑦
    ['http://0/', /unspecified/],
    ['http://[::]/', /unspecified/],
    ['http://[0:0:0:0:0:ffff:127.0.0.1]/', /loopback/],
    ['http://[::ffff:127.0.0.1]/', /loopback/],
    ['http://[::ffff:a9fe:a9fe]/', /link-local/],
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['https://[fd00::1]:8443/x', /private/],
    ['http://localhost:8080/hook', /loopback/], // a name resolving (really) to a private address
    ['ftp://example.com/', /scheme/],
    ['file:///etc/passwd', /scheme/],
    ['javascript:alert(1)', /scheme/],
    ['not a url', /not a valid URL/],
  ];
  for (const [url, reason] of blocked) {
    it(`blocks ${url}`, async () => {
      await assert.rejects(assertAllowedUrl(url, STRICT), (err: unknown) => {
        assert.ok(err instanceof OutboundBlockedError, String(err));
        assert.equal(err.url, redactUrl(url), 'the URL kept is redacted');
        assert.match(err.reason, reason);
        return true;
      });
    });
  }

  it('checks every resolved address, not just the first', async () => {
    outboundTestHooks.resolve = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    await assert.rejects(assertAllowedUrl('https://mixed.test/', STRICT), /private address 10\.0\.0\.7/);
  });

  it('accepts public addresses and names, and everything with allowPrivate', async () => {
    const u = await assertAllowedUrl('http://93.184.216.34/x', STRICT);
    assert.equal(u.hostname, '93.184.216.34');
    outboundTestHooks.resolve = async () => [{ address: '2606:4700:4700::1111', family: 6 }];
    assert.equal((await assertAllowedUrl('https://public.test/hook', STRICT)).hostname, 'public.test');
    assert.equal((await assertAllowedUrl('http://127.0.0.1:9/', OPEN)).port, '9');
    await assert.rejects(assertAllowedUrl('ftp://127.0.0.1/', OPEN), /scheme/); // the scheme rule always holds
  });
});

describe('outboundRequest', () => {
  let server: http.Server;
  let port = 0;
  let hits: string[] = [];
  const hanging: http.ServerResponse[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/echo') {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain', 'x-seen-method': req.method ?? '' }).end(`${req.method} ${body}`));
      } else if (url.pathname === '/big') {
        res.writeHead(200).end('x'.repeat(10_000));
      } else if (url.pathname === '/hang') {
        hanging.push(res); // never answers
      } else if (url.pathname === '/drip') {
        res.writeHead(200); // headers at once, then the body never finishes
        res.write('a');
        hanging.push(res);
      } else if (url.pathname === '/redirect') {
        res.writeHead(302, { location: url.searchParams.get('to') ?? '/echo' }).end();
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    for (const r of hanging) r.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  afterEach(() => {
    outboundTestHooks.resolve = null;
    outboundTestHooks.allowAddress = null;
    hits = [];
  });

  const base = () => `http://127.0.0.1:${port}`;
  const opts = (policy: OutboundPolicy, extra: Partial<Parameters<typeof outboundRequest>[1]> = {}) => ({
    timeoutMs: 2000,
    maxBytes: 4096,
    maxRedirects: 0,
    policy,
    ...extra,
  });

  it('sends and reads with allowPrivate', async () => {
    const r = await outboundRequest(`${base()}/echo`, opts(OPEN, { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } }));
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'POST hello');
    assert.equal(r.headers['x-seen-method'], 'POST');
    assert.equal(r.truncated, false);
  });

  it('never connects to a private literal address under the strict policy', async () => {
    await assert.rejects(outboundRequest(`${base()}/echo`, opts(STRICT)), (e: unknown) => e instanceof OutboundBlockedError && /loopback/.test(e.reason));
    await assert.rejects(outboundRequest(`http://0x7f000001:${port}/echo`, opts(STRICT)), OutboundBlockedError);
    assert.deepEqual(hits, []);
  });

  it('blocks a name resolving to a private address at connect time (localhost)', async () => {
    await assert.rejects(
      outboundRequest(`http://localhost:${port}/echo`, opts(STRICT)),
      (e: unknown) => e instanceof OutboundBlockedError && /loopback/.test(e.reason),
    );
    assert.deepEqual(hits, []);
  });

  it('defeats DNS rebinding: the address connected to is the one checked', async () => {
    let calls = 0;
    // First answer public (what a separate pre-check would see), then the private one.
    outboundTestHooks.resolve = async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    await assertAllowedUrl(`http://rebind.test:${port}/echo`, STRICT); // passes: public at check time
    await assert.rejects(
      outboundRequest(`http://rebind.test:${port}/echo`, opts(STRICT)),
      (e: unknown) => e instanceof OutboundBlockedError && /loopback address 127\.0\.0\.1/.test(e.reason),
    );
    assert.equal(calls, 2);
    assert.deepEqual(hits, []);
  });

  it('connects to the resolved address it approved (injected resolver)', async () => {
    outboundTestHooks.resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    outboundTestHooks.allowAddress = (ip) => ip === '127.0.0.1'; // stand-in for a public host
    const r = await outboundRequest(`http://public.test:${port}/echo`, opts(STRICT));
    assert.equal(r.status, 200);
    assert.deepEqual(hits, ['/echo']);
  });

  it('re-checks every redirect hop', async () => {
    outboundTestHooks.allowAddress = (ip) => ip === '127.0.0.1';
    outboundTestHooks.resolve = async (host) => [{ address: host === 'internal.test' ? '10.0.0.5' : '127.0.0.1', family: 4 }];
    // to a literal metadata address
    await assert.rejects(
      outboundRequest(`${base()}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`, opts(STRICT, { maxRedirects: 3 })),
      (e: unknown) => e instanceof OutboundBlockedError && /link-local/.test(e.reason) && e.url === 'http://169.254.169.254/<redacted>',
    );
    // to a name that resolves to a private address
    await assert.rejects(
      outboundRequest(`${base()}/redirect?to=${encodeURIComponent(`http://internal.test:${port}/echo`)}`, opts(STRICT, { maxRedirects: 3 })),
      (e: unknown) => e instanceof OutboundBlockedError && /private address 10\.0\.0\.5/.test(e.reason),
    );
    // to an IPv4-mapped loopback literal that the hook does not allow
    await assert.rejects(
      outboundRequest(`${base()}/redirect?to=${encodeURIComponent(`http://[::ffff:127.0.0.1]:${port}/echo`)}`, opts(STRICT, { maxRedirects: 3 })),
      OutboundBlockedError,
    );
    assert.deepEqual(hits, [
      '/redirect?to=http%3A%2F%2F169.254.169.254%2Flatest%2Fmeta-data%2F',
      `/redirect?to=${encodeURIComponent(`http://internal.test:${port}/echo`)}`,
      `/redirect?to=${encodeURIComponent(`http://[::ffff:127.0.0.1]:${port}/echo`)}`,
    ]);
    // an allowed hop is followed; 302 after POST becomes GET
    const ok = await outboundRequest(`http://public.test:${port}/redirect?to=/echo`, opts(STRICT, { maxRedirects: 1, method: 'POST', body: 'x' }));
    assert.equal(ok.status, 200);
    assert.equal(ok.url, `http://public.test:${port}/echo`);
    assert.equal(ok.body.toString(), 'GET ');
  });

  it('does not follow redirects with maxRedirects 0, and stops at the limit', async () => {
    const r = await outboundRequest(`${base()}/redirect?to=/echo`, opts(OPEN));
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, '/echo');
    const loop = await outboundRequest(`${base()}/redirect?to=${encodeURIComponent('/redirect?to=/echo')}`, opts(OPEN, { maxRedirects: 1 }));
    assert.equal(loop.status, 302);
  });

  it('stops reading after maxBytes', async () => {
    const r = await outboundRequest(`${base()}/big`, opts(OPEN, { maxBytes: 1024 }));
    assert.equal(r.body.length, 1024);
    assert.equal(r.truncated, true);
  });

  it('bounds the whole request by timeoutMs: no answer, and a body that never ends', async () => {
    for (const path of ['/hang', '/drip']) {
      const t = Date.now();
      await assert.rejects(outboundRequest(`${base()}${path}`, opts(OPEN, { timeoutMs: 300 })), /timed out after 300 ms/);
      const took = Date.now() - t;
      assert.ok(took >= 250 && took < 2000, `${path} took ${took} ms`);
    }
  });

  it('can be aborted by the caller', async () => {
    const ac = new AbortController();
    const p = outboundRequest(`${base()}/hang`, opts(OPEN, { timeoutMs: 10_000, signal: ac.signal }));
    ac.abort(new Error('caller gave up'));
    await assert.rejects(p, /caller gave up/);
  });
});
