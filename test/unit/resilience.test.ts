// The pure parts of the resilience rules: which failures are the database's, request targets that are
// UTF-8, names that show nothing, names compared after NFC, failed operator-token attempts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromDatabase, isDatabaseUnavailable } from '../../src/store/unavailable.js';
import { isUtf8Url } from '../../src/http/kit/envelope.js';
import { isInvisible, isStorableText, nameKey, nameSpellings } from '../../src/domain/text.js';
import { addressScope } from '../../src/http/kit/operator-attempts.js';
import { ApiError } from '../../src/util/errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('database failures: connection lost, server going, a statement timed out, SQLite busy or failing; not the request', () => {
  for (const e of [
    withCode('57P01'),
    withCode('57P03'),
    withCode('08006'),
    withCode('08001'),
    withCode('57014'), // a statement timeout
    withCode('SQLITE_BUSY'),
    withCode('SQLITE_IOERR_WRITE'),
    new Error('Connection terminated unexpectedly'),
    new Error('Client has encountered a connection error and is not queryable'),
  ]) {
    assert.equal(isDatabaseUnavailable(e), true, `${(e as { code?: string }).code ?? e.message}`);
  }
  for (const e of [withCode('23505'), withCode('22P02'), withCode('SQLITE_CONSTRAINT_UNIQUE'), new Error('boom'), ApiError.notFound('User'), null, 'x']) {
    assert.equal(isDatabaseUnavailable(e), false, String((e as { code?: string })?.code ?? e));
  }
  // A socket error is the database's only when the store says it came from its client.
  const refused = withCode('ECONNREFUSED');
  assert.equal(isDatabaseUnavailable(refused), false);
  assert.equal(isDatabaseUnavailable(fromDatabase(refused)), true);
  assert.equal(isDatabaseUnavailable(fromDatabase(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]))), true);
  assert.equal(isDatabaseUnavailable(fromDatabase(withCode('23505'))), false);
  // The WAL's flush failing under SQLite (a full or failing disk).
  assert.equal(isDatabaseUnavailable(fromDatabase(withCode('EIO'))), true);
  assert.equal(isDatabaseUnavailable(withCode('EIO')), false);
});

test('request targets: UTF-8 in raw and percent-encoded bytes', () => {
  for (const u of ['/v1/asset?user_uid=abc', '/v1/asset?x=%C3%A9', '/a%20b?q=100%', '/v1/x?y=%zz', '/v1/x?y=\u00c3\u00a9']) assert.equal(isUtf8Url(u), true, u);
  for (const u of ['/v1/asset?user_uid=%FF', '/v1/x?y=%C3', '/v1/x?y=%ED%A0%80', '/v1/x?y=%C0%AF', '/v1/x?y=\u00ff']) assert.equal(isUtf8Url(u), false, u);
});

test('names: invisible ones, NFC keys, the spellings a stored name may have', () => {
  for (const s of ['\u200b', ' \u200d\ufeff\u2060 ', '\u3164', '\u00ad', '\u2800', '\ufe0f']) assert.equal(isInvisible(s), true, JSON.stringify(s));
  for (const s of ['a', '\u200ba', 'Café', '😀']) assert.equal(isInvisible(s), false, s);
  assert.equal(nameKey('Cafe\u0301'), 'Caf\u00e9');
  assert.deepEqual(new Set(nameSpellings('Caf\u00e9')), new Set(['Caf\u00e9', 'Cafe\u0301']));
  assert.equal(isStorableText('a\u0000'), false);
  assert.equal(isStorableText('a\ud800'), false);
});

test('operator-token attempts: an IPv4 address counts alone, an IPv6 address by its /64', () => {
  assert.equal(addressScope('1.2.3.4'), 'ip:1.2.3.4');
  assert.equal(addressScope('::ffff:1.2.3.4'), 'ip:1.2.3.4');
  const s = addressScope('2001:db8:1:2::1');
  assert.equal(s, 'ip:2001:db8:1:2::/64');
  for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:db8:1:2:a::b']) assert.equal(addressScope(same), s, same);
  for (const other of ['2001:db8:1:3::1', '2001:db8::1', '::1']) assert.notEqual(addressScope(other), s, other);
  assert.equal(addressScope('::1'), 'ip:0:0:0:0::/64');
  assert.equal(addressScope('2001:db8::'), 'ip:2001:db8:0:0::/64');
});
