// Pure parts of the operator's safety: what a public URL may be, how a URL is logged, the audit chain's links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { publicUrlProblem } from '../../src/domain/public-url.js';
import { redactUrl } from '../../src/net/redact-url.js';
import { checkLinks, entryHash, GENESIS_HASH, type StoredEntry } from '../../src/util/audit-chain.js';
import { loadConfig, ConfigError } from '../../src/config/config.js';

test('a public URL is an origin and an optional clean path, as PUBLIC_URL takes it', () => {
  for (const ok of ['https://mint.example.com', 'http://127.0.0.1:8080', 'https://example.com/mint/', 'https://example.com/a-b/c_d.e~f'])
    assert.equal(publicUrlProblem(ok), null, ok);
  const refused: [string, RegExp][] = [
    ['http://u:p@host/x?y#z', /credentials/],
    ['https://host/x?y=1', /query/],
    ['https://host/#frag', /fragment/],
    ['https://host/a b', /spaces/],
    ['https://host/a\nb', /spaces|control/],
    ['https://host/a/../b', /\.\./],
    ['https://host/a%20b', /path/],
    ['ftp://host/', /http/],
    ['host', /not a URL/],
  ];
  for (const [value, reason] of refused) assert.match(publicUrlProblem(value) ?? '', reason, value);
  assert.throws(
    () => loadConfig({ PUBLIC_URL: 'http://u:p@host/x?y#z' }),
    (e: unknown) => e instanceof ConfigError && /PUBLIC_URL/.test(e.message),
  );
});

test('a URL in a log line is its origin; whether it has a path and a query, not what they hold', () => {
  assert.equal(redactUrl('https://hooks.slack.com/services/T0/B0/XXXXSECRET'), 'https://hooks.slack.com/<redacted>');
  assert.equal(redactUrl('https://user:pw@example.com:8443/hook?token=abc'), 'https://example.com:8443/<redacted>?<redacted>');
  assert.equal(redactUrl('https://example.com/'), 'https://example.com/');
  assert.equal(redactUrl('not a url'), '(not a valid URL)');
  assert.equal(redactUrl('javascript:alert(1)'), 'javascript:(redacted)');
});

test('the audit chain: an entry changed, removed or out of place is the first broken link', () => {
  const entries: StoredEntry[] = [];
  let prev = GENESIS_HASH;
  for (let seq = 1; seq <= 4; seq++) {
    const e = {
      seq,
      uid: `u${seq}`,
      created_at: '2026-01-01T00:00:00.000Z',
      actor: 'cli',
      actor_detail: null,
      action: 'x',
      app_uid: null,
      user_uid: null,
      chain_id: null,
      details: '{}',
    };
    const hash = entryHash(prev, e);
    entries.push({ ...e, prev_hash: prev, hash });
    prev = hash;
  }
  const start = { seq: 0, hash: GENESIS_HASH };
  assert.deepEqual(checkLinks(start, entries), { broken: null, seq: 4, hash: prev });
  const edited = entries.map((e) => (e.seq === 2 ? { ...e, details: '{"a":1}' } : e));
  assert.equal((checkLinks(start, edited) as { broken: { seq: number } }).broken.seq, 2);
  const removed = entries.filter((e) => e.seq !== 3);
  assert.match((checkLinks(start, removed) as { broken: { reason: string } }).broken.reason, /entry 3 is missing/);
  // Rewritten from 2 on with fresh hashes but a wrong link: still found at 2.
  const relinked = entries.map((e) => (e.seq === 2 ? { ...e, prev_hash: 'f'.repeat(64), hash: entryHash('f'.repeat(64), e) } : e));
  assert.equal((checkLinks(start, relinked) as { broken: { seq: number } }).broken.seq, 2);
});
