// test:exclusive — measures timing; run with the machine to itself (scripts/run-integration.mjs).
// Every query the service issues, as SQLite plans it: none may read a large table from end to end.
// The service runs its use cases (users, assets minted, lists, transfers, burns, rewards, webhooks,
// the management API, retention); every distinct SQL text it prepares is recorded, then planned with
// EXPLAIN QUERY PLAN. A `SCAN` of a table that grows with use fails the test, unless allowed below
// with the reason it is bounded; so does a SEARCH on the App alone in a statement that narrows by uids,
// a user, a collection or a status.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type SQLite from 'better-sqlite3';
import { sqlObservers } from '../../src/store/sqlite/statements.js';
import { createReward } from '../../src/services/rewards/index.js';
import { pruneOnce } from '../../src/services/retention.js';
import { ApiClient, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

/** Tables that grow with the number of users, assets, requests or events. */
const LARGE = new Set([
  'assets',
  'users',
  'jobs',
  'events',
  'webhook_deliveries',
  'webhook_attempts',
  'chain_txs',
  'transfers',
  'burns',
  'allocations',
  'claims',
  'forwarder_nonces',
  'reward_balances',
  'wallets',
]);

/** Scans that are bounded, with why. Matched against the SQL text. */
const ALLOWED: { sql: RegExp; why: string }[] = [
  {
    sql: /^select "uid", "app_uid", "email" from "users" where "email" is not null order by "created_at", "uid"$/,
    why: 'migration 008 fills email_key: once, at the upgrade',
  },
  {
    sql: /^insert into "wallets" \("user_uid", "chain_id", "address", "created_at"\) select .* from "users" where "wallet_address" is not null$/,
    why: 'migration 012 copies every wallet to the wallets table: once, at the upgrade',
  },
];

describe('query plans (sqlite)', () => {
  let t: TestService;
  const seen = new Map<string, SQLite.Database>();
  const observe = (text: string, database: SQLite.Database) => void seen.set(text, database);
  let receiver: http.Server;
  before(async () => {
    sqlObservers.add(observe);
    receiver = http.createServer((req, res) => req.resume().on('end', () => res.end('ok')));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    t = await startTestService('sqlite', { OUTBOUND_ALLOW_PRIVATE: 'true' });
  });
  after(async () => {
    sqlObservers.delete(observe);
    await t?.stop();
    receiver.close();
  });

  it('no query scans a large table', async () => {
    // The use cases, through the API as clients use it.
    const app = await t.newApp();
    const admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
    await admin.call('PUT', `/apps/${app.uid}/webhook`, { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` });
    const collection = await t.newCollection(app.uid);
    const a = (await app.api.post('/user', { email: 'plan@example.com', user_external_id: 'plan-1' })).body.data.uid;
    const b = (await app.api.post('/user', {})).body.data.uid;
    const assets: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await app.api.post('/asset', {
        user_uid: a,
        collection_uid: collection,
        asset_external_id: `plan-${i}`,
        data: { name: `Plan ${i}`, unique_name: i === 0, image_url: 'https://example.com/p.png', store_image_on_ipfs: false },
      });
      assert.equal(r.status, 201, r.raw);
      assets.push(r.body.data.uid);
    }
    await waitFor('minted', async () => (await Promise.all(assets.map((u) => app.api.get(`/asset/${u}`)))).every((r) => r.body.data.is_minted), 60_000);
    for (const p of [
      `/user/${a}`,
      '/user?email=plan@example.com',
      '/user?user_external_id=plan-1',
      `/collection/${collection}`,
      `/asset?user_uid=${a}`,
      `/deposit?user_uid=${a}&collection_uid=${collection}`,
    ]) {
      assert.equal((await app.api.get(p)).status, 200, p);
    }
    const bWallet = (await app.api.get(`/deposit?user_uid=${b}&collection_uid=${collection}`)).body.data.wallet_address as string;
    const transfer = await app.api.post('/transfer', { asset_uid: assets[0], from_user_uid: a, to_address: bWallet });
    assert.equal(transfer.status, 201, transfer.raw);
    const burn = await app.api.post('/burn', { asset_uid: assets[1], from_user_uid: a });
    assert.equal(burn.status, 201, burn.raw);
    await waitFor(
      'transfer and burn done',
      async () =>
        (await app.api.get(`/transfer/${transfer.body.data.uid}`)).body.data.status !== 'pending' &&
        (await app.api.get(`/burn/${burn.body.data.uid}`)).body.data.status !== 'pending',
      60_000,
    );
    const edit = await app.api.call('PUT', `/asset/${assets[2]}`, { data: { name: 'Edited', unique_name: false, image_url: 'https://example.com/e.png' } });
    assert.equal(edit.status, 200, edit.raw);
    for (const p of [`/transfer?user_uid=${a}`, `/burn?user_uid=${a}`, `/reward/allocation?user_uid=${a}`, `/reward/claim?user_uid=${a}`])
      assert.equal((await app.api.get(p)).status, 200, p);

    const { uid: reward } = await createReward(t.svc.ctx, app.uid, { name: 'Plan points', token_name: 'Plan', token_symbol: 'PLN', supply: '1000' });
    await waitFor('reward deployed', async () => (await app.api.get(`/reward/${reward}`)).body.data.status === 'deployed', 60_000);
    const alloc = await app.api.post('/reward/allocate', { reward_uid: reward, to_user_uid: a, amount: 5, nonce: 'plan-n1' });
    assert.equal(alloc.status, 201, alloc.raw);
    await waitFor('allocation done', async () => (await app.api.get(`/reward/allocation/${alloc.body.data.uid}`)).body.data.status === 'done', 60_000);
    const claim = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: a, to_address: '0x000000000000000000000000000000000000dEaD' });
    assert.equal(claim.status, 201, claim.raw);
    await waitFor('claim done', async () => (await app.api.get(`/reward/claim/${claim.body.data.uid}`)).body.data.status !== 'pending', 60_000);
    assert.equal((await app.api.get(`/reward/balance?reward_uid=${reward}&user_uid=${a}`)).status, 200);

    for (const p of [
      '/apps',
      `/apps/${app.uid}/collections`,
      `/apps/${app.uid}/users`,
      `/apps/${app.uid}/webhook`,
      `/apps/${app.uid}/webhook/events`,
      `/apps/${app.uid}/rewards`,
      `/apps/${app.uid}/rewards/${reward}`,
    ]) {
      assert.equal((await admin.get(p)).status, 200, p);
    }
    const events = (await admin.get(`/apps/${app.uid}/webhook/events`)).body.data as { event_id: string }[];
    assert.ok(events.length > 0, 'webhook deliveries happened');
    assert.equal((await admin.get(`/apps/${app.uid}/webhook/events/${events[0].event_id}/attempts`)).status, 200);
    assert.equal((await admin.get('/apps/' + app.uid + '/webhook/events?status=delivered')).status, 200);
    for (const p of ['/health', '/metrics']) assert.equal((await fetch(`${t.svc.url}${p}`)).status, 200, p);
    // The console's lists (by collection: in token id order; by a rare status or not minted: its partial
    // index) and a user's page there. Minted, the common status, reads the App's assets newest first:
    // most of what it reads matches.
    const consoleApi = new ApiClient(`${t.svc.url}/console/api`, undefined, t.svc.ctx.installation.operatorToken);
    const byStatus = ['not_minted', 'failed', 'transferring', 'burning', 'burned'].map((st) => `/apps/${app.uid}/assets?status=${st}`);
    for (const p of [
      `/apps/${app.uid}/assets`,
      `/apps/${app.uid}/assets?collection=${collection}`,
      ...byStatus,
      `/apps/${app.uid}/users`,
      `/apps/${app.uid}/users/${a}`,
    ]) {
      assert.equal((await consoleApi.get(p)).status, 200, p);
    }
    await pruneOnce(t.svc.ctx, 30, Date.now() + 365 * 86_400_000);

    // The plans. A scan of a partial index is bounded: only the rows such a query looks for are in it.
    const partial = new Set<string>();
    const offenders: string[] = [];
    for (const [text, database] of seen) {
      if (!/^\s*(select|update|delete|with|insert)/i.test(text) || /^\s*insert\b(?![\s\S]*\bselect\b)/i.test(text)) continue;
      const params = (text.match(/\?/g) ?? []).length;
      let plan: { detail: string }[];
      try {
        plan = database.prepare(`explain query plan ${text}`).all(...Array(params).fill(null)) as { detail: string }[];
      } catch {
        continue; // statements of a connection closed meanwhile are planned on the next one seen
      }
      for (const r of database.prepare("select name from sqlite_master where type = 'index' and sql like '% where %'").all() as { name: string }[])
        partial.add(r.name);
      const scans = plan
        .map((p) => p.detail)
        .filter((d) => {
          const m = /^SCAN (\w+)(?: AS \w+)?(?: USING (?:COVERING )?INDEX (\w+))?/.exec(d);
          return m !== null && LARGE.has(m[1]) && !/USING (COVERING )?INDEX .*\(/.test(d) && !(m[2] && partial.has(m[2]));
        });
      if (scans.length && !ALLOWED.some((a) => a.sql.test(text))) offenders.push(`${scans.join('; ')}\n    ${text.slice(0, 300)}`);
      // Jobs by kind alone are every job of the kind ever run (finished ones stay for RETENTION_DAYS):
      // a query must also narrow by status (the claim once read them all, and sorted them, per claim).
      const byKindOnly = plan
        .map((p) => p.detail)
        .filter((d) => /^SEARCH jobs USING (COVERING )?INDEX \w+ \(kind=\?\)/.test(d) && !partial.has(/INDEX (\w+)/.exec(d)![1]));
      if (byKindOnly.length) offenders.push(`${byKindOnly.join('; ')}\n    ${text.slice(0, 300)}`);
      // A search on the App alone, in a statement that narrows by uids, a user, a collection or a status:
      // the planner walks every row of the App and filters (one user of an App can hold a million
      // assets); the index that matches the filter must be the one searched.
      const narrows =
        /"(owner_user_uid|mint_for_user_uid|user_uid|to_user_uid|from_user_uid|collection_uid|status|mint_status|is_transferring|is_burning|is_burned)"\s*(=|in\b|!=|<>)/i.test(
          text,
        ) || /"uid"\s*(=\s*\?|in\s*\(\s*\?)/i.test(text); // uids given (not a join on them)
      // (A partial index is exempt: its WHERE is the filter.)
      const appOnly = plan
        .map((p) => p.detail)
        .filter(
          (d) =>
            /^SEARCH \w+(?: AS \w+)? USING (?:COVERING )?INDEX \w+ \(app_uid=\?(?: AND (?:created_at|uid|seq|id)[<>=]+\?)*\)/.test(d) &&
            !partial.has(/INDEX (\w+)/.exec(d)![1]),
        );
      if (narrows && appOnly.length) offenders.push(`${appOnly.join('; ')} (filters on a user, collection or status)\n    ${text.slice(0, 300)}`);
    }
    assert.ok(seen.size > 100, `${seen.size} distinct statements observed`);
    assert.deepEqual(offenders, [], `full scans of large tables:\n  ${offenders.join('\n  ')}`);
  });
});
