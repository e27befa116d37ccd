// Relayer rotation while the service works (SQLite, local custody, embedded anvil): during a burst of
// 300 asset creates and a few transfers, `keys rotate-relayers` (its service function) brings three new
// relayers in and retires the old ones. Every create is answered 201, every asset is minted exactly once
// (one Transfer from 0x0 per asset on chain, token ids unique), every transaction recorded after the
// switch comes from a new relayer, on chain the new relayers are operators of every contract (a
// collection deployed before, one deployed during the rotation, a reward) and the old ones are not, and
// the audit log has the rotation's start and the retirement.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, http, parseAbi, type Address, type PublicClient } from 'viem';
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts';
import { startTestService, type TestService } from '../helpers/service.js';
import { waitFor } from '../helpers/env.js';
import { contractsOf, operatorsOnChain, rotationFinished } from '../helpers/rotation.js';
import { startRelayerRotation } from '../../src/services/relayer-rotation.js';
import { createReward } from '../../src/services/rewards/index.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { RELAYER_SET_PROPAGATION_MS } from '../../src/chain/relayer-set.js';
import { defaultChain } from '../../src/config/config.js';

const BURST = 300;
const OPERATOR_TOKEN = 'operator-token-for-the-rotation-test-0123456789';
const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);

describe('relayer rotation during a burst (sqlite, local custody)', () => {
  let t: TestService;
  before(async () => {
    t = await startTestService('sqlite', { RELAYER_COUNT: '3', OPERATOR_TOKEN });
  });
  after(async () => t?.stop());

  it('rotates without failing or duplicating anything; new work goes to the new relayers only', async () => {
    const ctx = t.svc.ctx;
    const chainId = defaultChain(ctx).id;
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const { uid: reward } = await createReward(ctx, app.uid, { name: 'Points', token_name: 'Points', token_symbol: 'PTS', supply: '1000', description: null });
    await waitFor('reward deployed', async () => (await app.api.get(`/reward/${reward}`)).body.data.status === 'deployed', 30_000);
    const users: string[] = [];
    for (let i = 0; i < 8; i++) users.push((await app.api.post('/user', {})).body.data.uid);
    // Assets to transfer during the rotation, minted before it.
    const owned: { uid: string; user: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await app.api.post('/asset', assetBody(users[i], collection, `pre-${i}`));
      assert.equal(r.status, 201, r.raw);
      owned.push({ uid: r.body.data.uid, user: users[i] });
    }
    for (const a of owned) await waitFor('minted', async () => (await app.api.get(`/asset/${a.uid}`)).body.data.is_minted === true, 30_000);

    const statuses: number[] = [];
    const assetUids: string[] = [];
    let sent = 0;
    let rotationId = 0;
    let lateCollection = '';
    // The burst goes on (past BURST) until the rotation has switched, so that creates span the switch.
    let switched = false;
    const watcher = waitFor(
      'rotation switched',
      async () =>
        rotationId > 0 && (await ctx.db.selectFrom('relayer_rotations').select('switched_at').where('id', '=', rotationId).executeTakeFirst())?.switched_at,
      120_000,
      100,
    ).then(() => (switched = true));
    let afterSwitch = 0;
    const creator = async () => {
      while (sent < BURST || afterSwitch < 60) {
        const n = sent++;
        if (switched) afterSwitch++;
        // Past the burst, a trickle (a create per worker every 100 ms) until enough came after the switch.
        if (n >= BURST) await new Promise((r) => setTimeout(r, 100));
        const r = await app.api.post('/asset', assetBody(users[n % users.length], collection, `burst-${n}`));
        statuses.push(r.status);
        if (r.status === 201) assetUids.push(r.body.data.uid);
        if (n === 40) {
          const v = await startRelayerRotation(ctx, chainId, { actor: { kind: 'cli', detail: 'test' } });
          rotationId = v.id;
          assert.equal(v.new_relayers.length, 3);
          // A second one while it runs is refused, naming the way to follow the first.
          await assert.rejects(startRelayerRotation(ctx, chainId, { actor: { kind: 'cli', detail: 'test' } }), /not finished.*--resume/);
        }
        if (n === 120) {
          const transfers = owned.map((a) =>
            app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: a.user, to_address: privateKeyToAddress(generatePrivateKey()) }),
          );
          for (const tr of await Promise.all(transfers)) assert.equal(tr.status, 201, tr.raw);
          lateCollection = (await createCollection(ctx, app.uid, { name: 'Late', symbol: 'LT', editable: false })).uid;
        }
      }
    };
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 16 }, creator));
    await watcher;
    const acceptedMs = Date.now() - t0;
    const total = statuses.length;
    assert.ok(total >= BURST, `${total} creates`);
    assert.deepEqual(
      statuses.filter((s) => s !== 201),
      [],
      'every create answered 201',
    );

    const rotation = await rotationFinished(ctx.db, rotationId);
    const fresh = JSON.parse(rotation.new_relayers) as string[];
    const old = JSON.parse(rotation.old_relayers) as string[];
    await waitFor(
      'every asset minted',
      async () => {
        const r = await ctx.db
          .selectFrom('assets')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('uid', 'in', assetUids)
          .where('mint_status', '=', 'minted')
          .executeTakeFirstOrThrow();
        return Number(r.n) === total;
      },
      120_000,
      250,
    );
    await waitFor('transfers done', async () => {
      const r = await ctx.db.selectFrom('transfers').select('status').execute();
      return r.length === 3 && r.every((x) => x.status === 'done');
    });
    const doneMs = Date.now() - t0;

    // Exactly once: token ids unique, one Transfer from 0x0 per asset on chain.
    const rows = await ctx.db.selectFrom('assets').select(['uid', 'token_id']).where('collection_uid', '=', collection).execute();
    assert.equal(new Set(rows.map((r) => r.token_id)).size, rows.length, 'token ids unique');
    const rpc = createPublicClient({ transport: http(t.svc.chain!.rpcUrl) }) as PublicClient;
    const contract = (await ctx.db.selectFrom('collections').select('contract_address').where('uid', '=', collection).executeTakeFirstOrThrow())
      .contract_address as Address;
    const mints = await rpc.getLogs({ address: contract, event: erc721[0], args: { from: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n });
    assert.equal(mints.length, rows.length, 'one mint on chain per asset');
    assert.equal(new Set(mints.map((l) => l.args.tokenId)).size, mints.length, 'no token minted twice');

    // After the switch, only the new relayers (and the deployer's rotation transactions) sent anything.
    const after = await ctx.db
      .selectFrom('chain_txs')
      .select(['from_address', 'kind'])
      .where('chain_id', '=', chainId)
      .where('created_at', '>', Number(rotation.switched_at))
      .execute();
    const deployer = ctx.keys.deployer().address.toLowerCase();
    const strays = after.filter((r) => !fresh.includes(r.from_address) && r.from_address !== deployer);
    assert.deepEqual(strays, [], 'nothing recorded from an old relayer after the switch');
    assert.ok(
      after.some((r) => r.kind === 'asset.mint' && fresh.includes(r.from_address)),
      'the new relayers minted',
    );
    const before = await ctx.db
      .selectFrom('chain_txs')
      .select('from_address')
      .where('kind', '=', 'asset.mint')
      .where('created_at', '<', Number(rotation.created_at))
      .execute();
    assert.ok(
      before.every((r) => old.includes(r.from_address)),
      'the old relayers minted before',
    );

    // On chain: the late collection (deployed during the rotation) included.
    await waitFor(
      'late collection deployed',
      async () => (await ctx.db.selectFrom('collections').select('status').where('uid', '=', lateCollection).executeTakeFirst())?.status === 'deployed',
      30_000,
    );
    const contracts = await contractsOf(ctx.db, chainId);
    assert.equal(contracts.length, 3);
    for (const c of await operatorsOnChain(rpc, contracts, fresh, old)) {
      assert.equal(c.owner, deployer, `${c.contract} owned by the deployer`);
      assert.deepEqual(c.fresh, [true, true, true], `${c.contract}: the new relayers are operators`);
      assert.deepEqual(c.old, [false, false, false], `${c.contract}: the old relayers are not`);
    }
    const states = await ctx.db.selectFrom('relayers').select(['address', 'state']).where('chain_id', '=', chainId).where('idx', '>=', 0).execute();
    assert.deepEqual(
      states.filter((s) => old.includes(s.address)).map((s) => s.state),
      ['retired', 'retired', 'retired'],
    );
    assert.deepEqual(
      states.filter((s) => fresh.includes(s.address)).map((s) => s.state),
      ['active', 'active', 'active'],
    );
    // Each rotation transaction was recorded once: grants and revokes per (contract, relayer), handovers per contract.
    const rotationTxs = await ctx.db.selectFrom('chain_txs').select('ref').where('kind', '=', 'relayers.rotation').execute();
    assert.equal(new Set(rotationTxs.map((r) => r.ref)).size, rotationTxs.length, 'no rotation transaction recorded twice');

    const audit = await ctx.db.selectFrom('audit_log').select(['action', 'chain_id', 'details']).where('action', 'like', 'relayers.%').execute();
    assert.deepEqual(audit.map((a) => a.action).sort(), ['relayers.retired', 'relayers.rotation_started']);

    // The operator's view shows each relayer's state.
    const status = await fetch(`${t.svc.url}/admin/v1/chains/${chainId}`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    const view = (await status.json()) as {
      data?: { relayers: { address: string; state: string | null }[] };
      relayers?: { address: string; state: string | null }[];
    };
    const relayers = (view.data ?? view).relayers!;
    assert.deepEqual(
      relayers
        .filter((r) => r.state === 'retired')
        .map((r) => r.address)
        .sort(),
      [...old].sort(),
    );
    console.log(
      JSON.stringify({
        burst: total,
        accepted_ms: acceptedMs,
        all_done_ms: doneMs,
        rotation_ms: Number(rotation.finished_at) - Number(rotation.created_at),
        propagation_ms: RELAYER_SET_PROPAGATION_MS,
        rotation_txs: rotationTxs.length,
      }),
    );
  });
});

function assetBody(user: string, collection: string, external: string) {
  return {
    user_uid: user,
    collection_uid: collection,
    asset_external_id: external,
    data: {
      name: 'Blade',
      unique_name: false,
      image_url: 'https://example.com/b.png',
      store_image_on_ipfs: false,
      attributes: [{ trait_type: 'power', value: 1 }],
    },
  };
}
