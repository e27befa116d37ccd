// The console's sessions, sign-in throttle, cursors and row views, without a server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { sessionCookie } from '../../src/http/console/session.js';
import { ConsoleSessions } from '../../src/services/console/sessions.js';
import { assetStatus, imageUrl } from '../../src/services/console/assets.js';
import { decodeCursor, encodeCursor } from '../../src/services/requests/pages.js';
import { ApiError } from '../../src/util/errors.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

describe('console sessions', () => {
  let store: Store;
  let now = 1_000_000;
  const clock = () => now;
  before(async () => {
    store = openStore({ dataDir: await migratedSqliteDir() });
    await migrateToLatest(store);
  });
  after(async () => {
    await store.close();
  });

  it('accepts the operator token only, in constant time', () => {
    const s = new ConsoleSessions(store.db, 'operator-token-with-enough-length', 1000, clock);
    assert.equal(s.checkToken('operator-token-with-enough-length'), true);
    assert.equal(s.checkToken('operator-token-with-enough-lengtH'), false);
    assert.equal(s.checkToken(''), false);
    assert.equal(new ConsoleSessions(store.db, undefined).checkToken(''), false, 'no operator token: nobody signs in');
  });

  it('expires, ends on sign-out, and ends when the operator token changes', async () => {
    const s = new ConsoleSessions(store.db, 'token-one-token-one-token-one', 1000, clock);
    const a = await s.create();
    assert.equal(a.expiresAt, now + 1000);
    assert.deepEqual(await s.verify(a.id), { expiresAt: now + 1000 });
    assert.equal(await s.verify(a.id.slice(0, -1) + (a.id.endsWith('A') ? 'B' : 'A')), null);
    assert.equal(await s.verify('short'), null);
    assert.equal(await s.verify(undefined), null);
    now += 999;
    assert.ok(await s.verify(a.id));
    now += 1;
    assert.equal(await s.verify(a.id), null, 'expired');

    const b = await s.create();
    assert.ok(await s.verify(b.id));
    assert.equal(await new ConsoleSessions(store.db, 'token-two-token-two-token-two', 1000, clock).verify(b.id), null, 'another operator token');
    await s.destroy(b.id);
    assert.equal(await s.verify(b.id), null, 'signed out');

    // Only a digest of the id is stored; expired sessions are swept at the next sign-in.
    const rows = await store.db.selectFrom('meta').selectAll().where('key', 'like', 'console.session.%').execute();
    assert.ok(rows.every((r) => !r.key.includes(a.id) && !r.key.includes(b.id)));
    now += 5000;
    await s.create();
    assert.equal((await store.db.selectFrom('meta').selectAll().where('key', 'like', 'console.session.%').execute()).length, 1);
  });

  it('builds the cookie: HttpOnly, SameSite=Strict, /console, Secure on https', () => {
    assert.equal(sessionCookie('abc', 43_200_000, false), 'mw_console=abc; Path=/console; Max-Age=43200; HttpOnly; SameSite=Strict');
    assert.equal(sessionCookie('abc', 1000, true), 'mw_console=abc; Path=/console; Max-Age=1; HttpOnly; SameSite=Strict; Secure');
  });
});

describe('console lists', () => {
  it('round-trips cursors and refuses made-up ones as a validation error', () => {
    const c = encodeCursor(['2024-01-01T00:00:00.000000Z', '123456789012']);
    assert.deepEqual(decodeCursor(c, ['s', 's']), ['2024-01-01T00:00:00.000000Z', '123456789012']);
    assert.deepEqual(decodeCursor(encodeCursor([42]), ['n']), [42]);
    for (const bad of ['', 'x', encodeCursor([42]), Buffer.from('{"a":1}').toString('base64url')]) {
      assert.throws(
        () => decodeCursor(bad, ['s', 's']),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.details[0].field_name === 'cursor',
      );
    }
  });

  it('names the status of an asset', () => {
    const a = { mint_status: 'minted' as const, is_burned: 0, is_burning: 0, is_transferring: 0 };
    assert.equal(assetStatus({ ...a, mint_status: 'pending' }), 'not_minted');
    assert.equal(assetStatus({ ...a, mint_status: 'failed' }), 'failed');
    assert.equal(assetStatus(a), 'minted');
    assert.equal(assetStatus({ ...a, is_transferring: 1 }), 'transferring');
    assert.equal(assetStatus({ ...a, is_burning: 1 }), 'burning');
    assert.equal(assetStatus({ ...a, is_burned: 1 }), 'burned');
  });

  it('shows images the browser can load: ipfs:// through the service gateway', () => {
    assert.equal(imageUrl({ image: 'ipfs://bafkqaaa' }), '/ipfs/bafkqaaa');
    assert.equal(imageUrl({ image: 'ipfs://ipfs/bafkqaaa' }), '/ipfs/bafkqaaa');
    assert.equal(imageUrl({ image: 'https://cdn.example/a.png' }), 'https://cdn.example/a.png');
    assert.equal(imageUrl({ image: 'javascript:alert(1)' }), null);
    assert.equal(imageUrl({ image: 42 }), null);
    assert.equal(imageUrl({}), null);
  });
});
