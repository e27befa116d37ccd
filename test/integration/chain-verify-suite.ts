// `mintworks chain verify` against a real service on an external anvil, once per database: a workload
// (assets, a transfer, a burn, a reward with allocations and a claim) ends with no divergence (exit 0);
// then, with the service stopped, divergences are seeded by hand — rows changed in the database (an
// owner, a burned flag, a claim's amount, a token URI) and tokens moved on chain behind the service's
// back (the user's wallet impersonated: transferFrom, burn) — and verify reports each with both sides
// (exit 3), --fix sets each record to what the chain shows (audited, the missed events emitted), and
// verify then exits 0. The admin route answers the same report.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createPublicClient, createWalletClient, http as viemHttp, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { startOnExternalChain, type TestService } from '../helpers/service.js';
import { ApiClient, waitFor } from '../helpers/env.js';
import { createReward } from '../../src/services/rewards/index.js';
import { openCore, type Core } from '../../src/boot/open-core.js';

const CHAIN = 31338;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);
const erc721 = parseAbi(['function transferFrom(address from, address to, uint256 id)', 'function burn(uint256 id)']);
const WEI = 10n ** 18n;
const fresh = (): Address => privateKeyToAddress(generatePrivateKey()).toLowerCase() as Address;

type Report = {
  divergences: {
    kind: string;
    app_uid: string;
    record: { type: string; uid: string };
    field: string;
    recorded: unknown;
    on_chain: unknown;
    fixable: boolean;
    fixed?: string;
  }[];
  checked: Record<string, number>;
  in_flight: Record<string, number>;
  unverified: Record<string, number>;
};

export function chainVerifySuite(db: 'sqlite' | 'postgres'): void {
  describe(`chain verify on ${db}`, () => {
    let node: ExternalNode;
    let t: TestService;
    let app: Awaited<ReturnType<TestService['newApp']>>;
    let env: Record<string, string>;
    let core: Core | null = null;
    let receiver: http.Server;
    const alerts: { alert: string; data: Record<string, any> }[] = [];

    before(async () => {
      receiver = http.createServer(async (req, res) => {
        let body = '';
        for await (const c of req) body += c;
        alerts.push(JSON.parse(body));
        res.writeHead(204).end();
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
      node = await startExternalNode({ kind: 'anvil', chainId: CHAIN, blockTimeS: 1 });
      const chain = { id: CHAIN, name: 'Verify', rpc: node.url };
      t = await startOnExternalChain(db, chain, node.fund, {
        CHAIN_VERIFY_INTERVAL_SECONDS: '1', // the background pass, every second here
        ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/alerts`,
        ALERT_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 3).toString('base64')}`,
        OUTBOUND_ALLOW_PRIVATE: 'true',
      });
      app = await t.newApp();
      const c = t.svc.ctx.config;
      env = {
        EMBEDDED_CHAIN: 'false',
        CHAINS: JSON.stringify([chain]),
        DATA_DIR: t.dataDir,
        LOG_LEVEL: 'silent',
        ...(c.databaseUrl ? { DATABASE_URL: c.databaseUrl } : {}),
      };
    });
    after(async () => {
      await core?.store.close();
      await t?.stop();
      await node?.stop();
      receiver?.close();
    });

    /** The CLI's JSON answer and exit code. */
    async function verify(...args: string[]): Promise<{ code: number; report: Report }> {
      const argv = [path.join(root, 'bin/mintworks.js'), 'chain', 'verify', '--chain', String(CHAIN), ...args, '--json'];
      try {
        const r = await run(process.execPath, argv, { env: { ...process.env, ...env } });
        return { code: 0, report: JSON.parse(r.stdout) };
      } catch (err) {
        const e = err as { code: number; stdout: string; stderr: string };
        assert.ok(e.stdout, `verify printed nothing (exit ${e.code}): ${e.stderr}`);
        return { code: e.code, report: JSON.parse(e.stdout) };
      }
    }

    /** A user and its wallet (created on first ask, by GET /deposit). */
    const newUser = async (collection: string) => {
      const uid = (await app.api.post('/user', {})).body.data.uid as string;
      const wallet = ((await app.api.get(`/deposit?user_uid=${uid}&collection_uid=${collection}`)).body.data.wallet_address as string).toLowerCase() as Address;
      return { uid, wallet };
    };
    const waitDone = (what: string, url: string) =>
      waitFor(
        `${what} done`,
        async () => {
          const d = (await app.api.get(url)).body.data;
          if (d.status === 'failed' || d.status === 'cancelled') throw new Error(`${what} ${d.status}`);
          return d.status === 'done' ? d : null;
        },
        60_000,
      );

    // The workload's records, by role.
    let u1: { uid: string; wallet: Address };
    let u2: { uid: string; wallet: Address };
    let contract: Address;
    const assets: { uid: string; token_id: number }[] = [];
    let claimUid: string;

    it('a workload ends with no divergence: exit 0, every record checked', async () => {
      const collection = await t.newCollection(app.uid);
      [u1, u2] = await Promise.all([newUser(collection), newUser(collection)]);
      contract = (await app.api.get(`/collection/${collection}`)).body.data.contract_address;
      const created = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          app.api.post('/asset', {
            user_uid: u1.uid,
            collection_uid: collection,
            asset_external_id: `verify-${i}-${Math.random().toString(36).slice(2)}`,
            data: { name: `Item ${i}`, unique_name: false, image_url: 'https://example.com/i.png', store_image_on_ipfs: false },
          }),
        ),
      );
      for (const r of created) {
        assert.equal(r.status, 201, r.raw);
        const a = await waitFor(
          'minted',
          async () => {
            const d = (await app.api.get(`/asset/${r.body.data.uid}`)).body.data;
            return d.is_minted ? d : null;
          },
          60_000,
        );
        assets.push({ uid: a.uid, token_id: Number(a.token_id) });
      }
      // assets[1] goes to u2, assets[2] is burned.
      const tr = await app.api.post('/transfer', { asset_uid: assets[1].uid, from_user_uid: u1.uid, to_address: u2.wallet });
      assert.ok(tr.status === 200 || tr.status === 201, tr.raw);
      const burn = await app.api.post('/burn', { asset_uid: assets[2].uid, from_user_uid: u1.uid });
      assert.ok(burn.status === 200 || burn.status === 201, burn.raw);
      await waitDone('transfer', `/transfer/${tr.body.data.uid}`);
      await waitDone('burn', `/burn/${burn.body.data.uid}`);
      // A reward: two allocations, then a claim of both (40).
      const { uid: reward } = await createReward(t.svc.ctx, app.uid, { name: 'Points', token_name: 'Points', token_symbol: 'PTS', supply: '1000' });
      for (const amount of [30, 10]) {
        const a = await app.api.post('/reward/allocate', { reward_uid: reward, to_user_uid: u1.uid, amount, nonce: `n-${amount}` });
        assert.ok(a.status === 200 || a.status === 201, a.raw);
        await waitDone('allocation', `/reward/allocation/${a.body.data.uid}`);
      }
      const claim = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: u1.uid, to_address: fresh() });
      assert.ok(claim.status === 200 || claim.status === 201, claim.raw);
      claimUid = claim.body.data.uid;
      assert.equal((await waitDone('claim', `/reward/claim/${claimUid}`)).amount, 40);

      const { code, report } = await verify();
      assert.deepEqual(report.divergences, [], JSON.stringify(report.divergences));
      assert.equal(code, 0);
      assert.equal(report.checked.collections, 1);
      assert.equal(report.checked.rewards, 1);
      assert.equal(report.checked.assets, 6);
      assert.equal(report.checked.allocations, 2);
      assert.equal(report.checked.claims, 1);
      assert.equal(report.checked.reward_balances, 1);
      assert.ok(
        Object.values(report.unverified).every((n) => n === 0),
        JSON.stringify(report.unverified),
      );

      // The admin route answers the same report.
      const admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      const viaRoute = await admin.post(`/chains/${CHAIN}/verify`, { app_uid: app.uid });
      assert.equal(viaRoute.status, 200, viaRoute.raw);
      assert.deepEqual(viaRoute.body.data.divergences, []);
      assert.equal(viaRoute.body.data.checked.assets, 6);
      assert.equal((await admin.post(`/chains/${CHAIN}/verify`, { fix: 'yes' })).status, 400);
      assert.equal((await admin.post(`/chains/${CHAIN}/verify`, { app_uid: 'nope' })).status, 404);
    });

    let item = '';
    let itemHolder = '';
    it('ERC-1155 items: each minted supply and balance checked against the chain', async () => {
      const admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      const c = await admin.post(`/apps/${app.uid}/collections`, { name: 'Potions', symbol: 'POT', standard: 'ERC1155' });
      assert.equal(c.status, 201, c.raw);
      await waitFor('items collection deployed', async () => (await app.api.get(`/collection/${c.body.data.uid}`)).body.data.status === 'deployed', 60_000);
      const data = { name: 'Potion', image_url: 'https://example.com/p.png', store_image_on_ipfs: false };
      item = (await app.api.post('/item', { collection_uid: c.body.data.uid, item_external_id: 'potion', data })).body.data.uid;
      itemHolder = (await app.api.post('/user', {})).body.data.uid;
      const mint = await app.api.post('/item/mint', { item_uid: item, to_user_uid: itemHolder, amount: 5, nonce: 1 });
      assert.equal(mint.status, 201, mint.raw);
      await waitDone('item mint', `/item/mint/${mint.body.data.uid}`);
      const { code, report } = await verify();
      assert.deepEqual(report.divergences, [], JSON.stringify(report.divergences));
      assert.equal(code, 0);
      assert.equal(report.checked.items, 1);
      assert.equal(report.checked.item_balances, 1);
    });

    it('the background pass counts a divergence in /metrics and raises a chain.divergence alert; it clears once the record agrees', async () => {
      const gauge = async () => {
        const text = await (await fetch(`${t.svc.url}/metrics`)).text();
        const m = text.match(new RegExp(`^mintworks_chain_divergences\\{chain="${CHAIN}"\\} (\\d+)$`, 'm'));
        return m ? Number(m[1]) : null;
      };
      await waitFor('a background pass', async () => (await gauge()) === 0, 30_000);
      const sql = t.svc.ctx.db;
      const { token_uri: uri } = await sql.selectFrom('assets').select('token_uri').where('uid', '=', assets[4].uid).executeTakeFirstOrThrow();
      await sql.updateTable('assets').set({ token_uri: 'https://example.com/seen-by-the-pass' }).where('uid', '=', assets[4].uid).execute();
      await waitFor('the divergence counted', async () => (await gauge()) === 1, 30_000);
      const alert = await waitFor('the alert', async () => alerts.find((a) => a.alert === 'chain.divergence' && a.data.record?.uid === assets[4].uid), 30_000);
      assert.deepEqual(
        [alert.data.chain_id, alert.data.kind, alert.data.recorded, alert.data.on_chain],
        [CHAIN, 'token_uri', 'https://example.com/seen-by-the-pass', uri],
      );
      await sql.updateTable('assets').set({ token_uri: uri }).where('uid', '=', assets[4].uid).execute();
      await waitFor('the divergence cleared', async () => (await gauge()) === 0, 30_000);
      assert.equal(alerts.filter((a) => a.alert === 'chain.divergence').length, 1, `one alert per divergence, not one per pass: ${JSON.stringify(alerts)}`);
    });

    it('seeded divergences are reported with both sides; --fix repairs each, audited, with the missed events', async () => {
      await t.svc.stop(); // behind the service's back: no worker, no indexer
      core = await openCore(t.svc.ctx.config, pino({ level: 'silent' }));
      const sql = core.store.db;
      // In the order they were emitted: PostgreSQL returns rows in no set order without one.
      const events = async (type: string) =>
        (await sql.selectFrom('events').select('payload').where('app_uid', '=', app.uid).where('type', '=', type).orderBy('seq').execute()).map((e) =>
          JSON.parse(e.payload),
        );
      const before = {
        transferred: (await events('asset.transferred')).length,
        burned: (await events('asset.burned')).length,
        claimed: (await events('reward.claimed')).length,
      };

      const uri = (await sql.selectFrom('assets').select('token_uri').where('uid', '=', assets[4].uid).executeTakeFirstOrThrow()).token_uri;
      // In the database.
      const stranger = fresh();
      await sql.updateTable('assets').set({ owner_address: stranger, owner_user_uid: null }).where('uid', '=', assets[0].uid).execute();
      await sql.updateTable('assets').set({ is_burned: 1 }).where('uid', '=', assets[3].uid).execute();
      await sql.updateTable('assets').set({ token_uri: 'https://example.com/not-the-token' }).where('uid', '=', assets[4].uid).execute();
      await sql.updateTable('claims').set({ amount: '1' }).where('uid', '=', claimUid).execute();

      // On chain, signed by the users' own wallets (impersonated on the node).
      const wallet = createWalletClient({ transport: viemHttp(node.url) });
      const rpc = createPublicClient({ transport: viemHttp(node.url) });
      const receiver = fresh();
      for (const w of [u1.wallet, u2.wallet]) {
        await node.fund(w, WEI);
        await rpc.request({ method: 'anvil_impersonateAccount' as any, params: [w] as any });
      }
      const moved = await wallet.writeContract({
        account: u1.wallet,
        chain: null,
        address: contract,
        abi: erc721,
        functionName: 'transferFrom',
        args: [u1.wallet, receiver, BigInt(assets[5].token_id)],
      });
      const burned = await wallet.writeContract({
        account: u2.wallet,
        chain: null,
        address: contract,
        abi: erc721,
        functionName: 'burn',
        args: [BigInt(assets[1].token_id)],
      });
      for (const hash of [moved, burned]) assert.equal((await rpc.waitForTransactionReceipt({ hash })).status, 'success');

      const found = await verify();
      assert.equal(found.code, 3, 'divergences: exit code 3');
      const by = new Map(found.report.divergences.map((d) => [`${d.record.uid}:${d.kind}`, d]));
      const expect = (uid: string, kind: string, field: string, recorded: unknown, onChain: unknown) => {
        const d = by.get(`${uid}:${kind}`);
        assert.ok(d, `${kind} of ${uid} reported: ${JSON.stringify(found.report.divergences)}`);
        assert.equal(d.app_uid, app.uid);
        assert.equal(d.field, field);
        assert.deepEqual([d.recorded, d.on_chain, d.fixable], [recorded, onChain, true], `${kind} of ${uid}`);
      };
      expect(assets[0].uid, 'asset_owner', 'owner_address', stranger, u1.wallet);
      expect(assets[3].uid, 'asset_burned', 'is_burned', true, false);
      expect(assets[4].uid, 'token_uri', 'token_uri', 'https://example.com/not-the-token', uri);
      expect(claimUid, 'claim_amount', 'amount', '0.000000000000000001', '40');
      expect(assets[5].uid, 'asset_owner', 'owner_address', u1.wallet, receiver);
      expect(assets[1].uid, 'asset_burned', 'is_burned', false, true);
      assert.equal(found.report.divergences.length, 6, JSON.stringify(found.report.divergences));

      const fixed = await verify('--fix');
      assert.equal(fixed.code, 0, JSON.stringify(fixed.report.divergences));
      assert.ok(fixed.report.divergences.every((d) => d.fixed === 'fixed'));
      const again = await verify();
      assert.equal(again.code, 0, JSON.stringify(again.report.divergences));
      assert.deepEqual(again.report.divergences, []);

      // The records say what the chain shows.
      const row = (uid: string) => sql.selectFrom('assets').selectAll().where('uid', '=', uid).executeTakeFirstOrThrow();
      assert.deepEqual([(await row(assets[0].uid)).owner_address, (await row(assets[0].uid)).owner_user_uid], [u1.wallet, u1.uid]);
      assert.equal((await row(assets[3].uid)).is_burned, 0);
      assert.equal((await row(assets[5].uid)).owner_address, receiver);
      assert.equal((await row(assets[5].uid)).owner_user_uid, null);
      assert.equal((await row(assets[1].uid)).is_burned, 1);
      const claim = await sql.selectFrom('claims').selectAll().where('uid', '=', claimUid).executeTakeFirstOrThrow();
      assert.equal(claim.amount, (40n * WEI).toString());

      // Audited, one entry per fix, with both sides.
      const audit = await sql.selectFrom('audit_log').selectAll().where('action', '=', 'chain.divergence_fixed').execute();
      assert.equal(audit.length, 6);
      assert.ok(audit.every((a) => a.actor === 'cli' && a.chain_id === CHAIN && a.app_uid === app.uid));
      const claimAudit = audit.map((a) => JSON.parse(a.details)).find((d) => d.kind === 'claim_amount');
      assert.deepEqual([claimAudit.recorded, claimAudit.on_chain], ['0.000000000000000001', '40']);

      // The events the services would have emitted.
      const transferred = await events('asset.transferred');
      assert.equal(transferred.length, before.transferred + 2);
      assert.ok(transferred.some((e) => e.asset.uid === assets[5].uid && e.asset.owner_address === receiver));
      assert.ok(transferred.some((e) => e.asset.uid === assets[0].uid && e.asset.owner_address === u1.wallet));
      const burnedEvents = await events('asset.burned');
      assert.equal(burnedEvents.length, before.burned + 1);
      assert.equal(burnedEvents.at(-1).asset.uid, assets[1].uid);
      const claimed = await events('reward.claimed');
      assert.equal(claimed.length, before.claimed + 1);
      assert.equal(claimed.at(-1).claim.amount, 40);
    });

    it('a seeded item supply and balance are reported with both sides; --fix sets them to the chain, audited', async () => {
      const sql = core!.store.db;
      await sql.updateTable('items').set({ minted_supply: '9' }).where('uid', '=', item).execute();
      await sql.updateTable('item_balances').set({ amount: '7' }).where('item_uid', '=', item).where('user_uid', '=', itemHolder).execute();
      const found = await verify();
      assert.equal(found.code, 3);
      assert.deepEqual(
        found.report.divergences.map((d) => [d.kind, d.record.type, d.record.uid, d.field, d.recorded, d.on_chain, d.fixable]),
        [
          ['item_supply', 'item', item, 'minted_supply', '9', '5', true],
          ['item_balance', 'item_balance', `${item}:${itemHolder}`, 'amount', '7', '5', true],
        ],
      );
      const fixed = await verify('--fix');
      assert.deepEqual(
        fixed.report.divergences.map((d) => d.fixed),
        ['fixed', 'fixed'],
      );
      assert.equal((await sql.selectFrom('items').select('minted_supply').where('uid', '=', item).executeTakeFirstOrThrow()).minted_supply, '5');
      const balance = await sql
        .selectFrom('item_balances')
        .select('amount')
        .where('item_uid', '=', item)
        .where('user_uid', '=', itemHolder)
        .executeTakeFirstOrThrow();
      assert.equal(balance.amount, '5');
      const audit = await sql.selectFrom('audit_log').select('details').where('action', '=', 'chain.divergence_fixed').execute();
      assert.deepEqual(
        audit
          .map((a) => JSON.parse(a.details))
          .filter((d) => d.kind.startsWith('item_'))
          .map((d) => [d.kind, d.recorded, d.on_chain]),
        [
          ['item_supply', '9', '5'],
          ['item_balance', '7', '5'],
        ],
      );
      assert.equal((await verify()).code, 0);
    });

    it('a token recorded minted that the chain never minted: reported, not fixable, left as it is by --fix', async () => {
      const sql = core!.store.db;
      await sql.updateTable('assets').set({ token_id: 424_242 }).where('uid', '=', assets[0].uid).execute();
      const found = await verify();
      assert.equal(found.code, 3);
      assert.deepEqual(
        found.report.divergences.map((d) => [d.kind, d.record.uid, d.recorded, d.on_chain, d.fixable]),
        [['asset_not_on_chain', assets[0].uid, 'minted', 'not minted', false]],
      );
      const fixed = await verify('--fix');
      assert.equal(fixed.code, 3, 'nothing fixed: still divergent');
      assert.equal(fixed.report.divergences[0].fixed, 'not_fixable');
      await sql.updateTable('assets').set({ token_id: assets[0].token_id }).where('uid', '=', assets[0].uid).execute();
      assert.equal((await verify()).code, 0);
    });

    it('a chain that does not answer proves nothing: no divergence, every contract unverified, exit code 4', async () => {
      await node.stop();
      const { code, report } = await verify();
      assert.deepEqual(report.divergences, []);
      // The asset collection, the item collection and the reward.
      assert.equal(report.unverified.collections + report.unverified.rewards, 3, JSON.stringify(report));
      assert.equal(code, 4);
    });
  });
}
