// The verifier's pure rules (src/services/verify/divergences.ts): a record beside the chain's facts gives
// the divergences with both sides and the fix that sets the record to what the chain shows; records in
// flight and chain reads that failed are never judged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  allocationDivergences,
  assetDivergences,
  balanceDivergences,
  claimDivergences,
  contractDivergences,
  divergenceKey,
  report,
  type AssetCase,
  type ContractCase,
  type Found,
} from '../../src/services/verify/divergences.js';
import { verifyText } from '../../src/cli/chain-verify.js';

const ALICE = '0x00000000000000000000000000000000000000a1';
const BOB = '0x00000000000000000000000000000000000000b0';
const EVE = '0x00000000000000000000000000000000000000e5';
const URI = 'http://127.0.0.1:8080/metadata/c1/7';

const asset = (over: Partial<AssetCase['asset']> = {}): AssetCase['asset'] => ({
  uid: 'a1',
  app_uid: 'app',
  mint_status: 'minted',
  is_burned: false,
  is_editing: false,
  owner_address: ALICE,
  token_uri: URI,
  ...over,
});
const owned = (owner = ALICE, tokenUri: string | null = URI) => ({ state: 'owned' as const, owner, tokenUri });

function found(c: AssetCase): Found[] {
  const v = assetDivergences(c);
  assert.equal(v.inFlight, false, 'judged, not in flight');
  return v.inFlight ? [] : v.found;
}

describe('assets against their tokens', () => {
  it('a record that agrees with the chain: nothing (addresses compared without case)', () => {
    assert.deepEqual(found({ asset: asset(), transfer: null, burn: null, token: owned(ALICE.toUpperCase().replace('0X', '0x')) }), []);
  });

  it('in flight: a mint pending, an edit, a transfer or burn a job or transaction still carries; never judged', () => {
    const token = owned(BOB);
    assert.equal(assetDivergences({ asset: asset({ mint_status: 'pending' }), transfer: null, burn: null, token }).inFlight, true);
    assert.equal(assetDivergences({ asset: asset({ is_editing: true }), transfer: null, burn: null, token }).inFlight, true);
    const tr = { uid: 't1', status: 'pending' as const, inFlight: true, to_address: BOB, from_wallet: ALICE };
    assert.equal(assetDivergences({ asset: asset(), transfer: tr, burn: null, token }).inFlight, true);
    assert.equal(
      assetDivergences({ asset: asset(), transfer: null, burn: { uid: 'b1', status: 'pending', inFlight: true }, token: { state: 'burned' } }).inFlight,
      true,
    );
  });

  it('a chain that did not answer: nothing concluded', () => {
    assert.deepEqual(found({ asset: asset({ owner_address: BOB }), transfer: null, burn: null, token: null }), []);
  });

  it('another owner on chain: asset_owner with both sides, fixed to the chain owner', () => {
    const [d, ...rest] = found({ asset: asset(), transfer: null, burn: null, token: owned(EVE) });
    assert.deepEqual(rest, []);
    assert.deepEqual(report(d), {
      kind: 'asset_owner',
      app_uid: 'app',
      record: { type: 'asset', uid: 'a1' },
      field: 'owner_address',
      recorded: ALICE,
      on_chain: EVE,
      fixable: true,
    });
    assert.deepEqual(d.plan, { do: 'asset_owner', asset_uid: 'a1', from: ALICE, to: EVE });
  });

  it('a token URI that differs: token_uri, fixed to the chain URI; an unread URI is not judged', () => {
    const [d] = found({ asset: asset({ token_uri: 'https://old/7' }), transfer: null, burn: null, token: owned() });
    assert.deepEqual([d.kind, d.recorded, d.on_chain, d.plan?.do], ['token_uri', 'https://old/7', URI, 'token_uri']);
    assert.deepEqual(found({ asset: asset({ token_uri: 'https://old/7' }), transfer: null, burn: null, token: owned(ALICE, null) }), []);
  });

  it('burned on chain, not in the record: asset_burned; with a burn pending (nothing carrying it) or cancelled: burn_status', () => {
    const [d] = found({ asset: asset(), transfer: null, burn: null, token: { state: 'burned' } });
    assert.deepEqual([d.kind, d.field, d.recorded, d.on_chain, d.fixable], ['asset_burned', 'is_burned', false, true, true]);
    assert.deepEqual(d.plan, { do: 'asset_burned', asset_uid: 'a1', burn_uid: null, burn_status: null });
    for (const status of ['pending', 'cancelled'] as const) {
      const [b] = found({ asset: asset(), transfer: null, burn: { uid: 'b1', status, inFlight: false }, token: { state: 'burned' } });
      assert.deepEqual([b.kind, b.record, b.recorded, b.on_chain], ['burn_status', { type: 'burn', uid: 'b1' }, status, 'done']);
      assert.deepEqual(b.plan, { do: 'asset_burned', asset_uid: 'a1', burn_uid: 'b1', burn_status: status });
    }
    assert.deepEqual(found({ asset: asset({ is_burned: true }), transfer: null, burn: null, token: { state: 'burned' } }), []);
  });

  it('recorded burned while the token exists: asset_burned the other way, fixed to the chain owner (a done burn undone)', () => {
    const [d] = found({ asset: asset({ is_burned: true }), transfer: null, burn: { uid: 'b1', status: 'done', inFlight: false }, token: owned(BOB) });
    assert.deepEqual([d.kind, d.recorded, d.on_chain, d.fixable], ['asset_burned', true, false, true]);
    assert.deepEqual(d.plan, { do: 'asset_unburned', asset_uid: 'a1', owner: BOB, burn_uid: 'b1' });
  });

  it('recorded minted, never minted on chain: asset_not_on_chain, not fixable; a failed mint whose token exists: asset_minted', () => {
    const [d] = found({ asset: asset(), transfer: null, burn: null, token: { state: 'absent' } });
    assert.deepEqual([d.kind, d.recorded, d.on_chain, d.fixable, d.plan], ['asset_not_on_chain', 'minted', 'not minted', false, undefined]);
    const [m] = found({ asset: asset({ mint_status: 'failed', owner_address: null }), transfer: null, burn: null, token: owned() });
    assert.deepEqual([m.kind, m.fixable], ['asset_minted', false]);
    assert.deepEqual(found({ asset: asset({ mint_status: 'failed' }), transfer: null, burn: null, token: { state: 'absent' } }), []);
  });

  it('a transfer cancelled (or stalled) that the chain executed: transfer_status done, and no separate owner divergence', () => {
    for (const status of ['cancelled', 'pending'] as const) {
      const tr = { uid: 't1', status, inFlight: false, to_address: BOB, from_wallet: ALICE };
      const all = found({ asset: asset(), transfer: tr, burn: null, token: owned(BOB) });
      assert.equal(all.length, 1);
      assert.deepEqual([all[0].kind, all[0].record, all[0].recorded, all[0].on_chain], ['transfer_status', { type: 'transfer', uid: 't1' }, status, 'done']);
      assert.deepEqual(all[0].plan, { do: 'transfer_done', transfer_uid: 't1', asset_uid: 'a1', status_was: status, to: BOB });
    }
  });

  it('a transfer recorded done whose token never left the sender: transfer_status, cancelled with the sender as owner', () => {
    const tr = { uid: 't1', status: 'done' as const, inFlight: false, to_address: BOB, from_wallet: ALICE };
    const [d] = found({ asset: asset({ owner_address: BOB }), transfer: tr, burn: null, token: owned(ALICE) });
    assert.deepEqual([d.kind, d.recorded, d.on_chain], ['transfer_status', 'done', 'not executed']);
    assert.deepEqual(d.plan, { do: 'transfer_cancelled', transfer_uid: 't1', asset_uid: 'a1', owner_was: BOB, owner: ALICE });
    // Done and moved on since by its recipient: only the owner is off.
    const [o] = found({ asset: asset({ owner_address: BOB }), transfer: tr, burn: null, token: owned(EVE) });
    assert.equal(o.kind, 'asset_owner');
  });
});

describe('contracts', () => {
  const ours = new Set([ALICE, BOB]);
  const base: ContractCase = {
    type: 'collection',
    uid: 'c1',
    app_uid: 'app',
    address: '0x00000000000000000000000000000000000000c1',
    hasCode: true,
    owner: ALICE,
    forwarder: EVE,
    operators: [{ address: BOB, is: true }],
    ourAccounts: ours,
    expectedForwarder: EVE,
    rotating: false,
  };
  it('code, owner, forwarder and operators as expected: nothing', () => assert.deepEqual(contractDivergences(base), []));
  it('no code: contract_missing alone; a stranger owner, another forwarder, an operator missing: each reported, none fixable', () => {
    assert.deepEqual(
      contractDivergences({ ...base, hasCode: false }).map((d) => d.kind),
      ['contract_missing'],
    );
    const ds = contractDivergences({ ...base, owner: '0x00000000000000000000000000000000000000ff', forwarder: BOB, operators: [{ address: BOB, is: false }] });
    assert.deepEqual(
      ds.map((d) => [d.kind, d.on_chain, d.fixable]),
      [
        ['contract_owner', '0x00000000000000000000000000000000000000ff', false],
        ['forwarder_mismatch', BOB, false],
        ['operator_missing', false, false],
      ],
    );
  });
  it('operators are not judged during a relayer rotation, nor unread facts', () => {
    assert.deepEqual(contractDivergences({ ...base, rotating: true, operators: [{ address: BOB, is: false }] }), []);
    assert.deepEqual(contractDivergences({ ...base, hasCode: null, owner: null, forwarder: null, operators: [{ address: BOB, is: null }] }), []);
  });
  it('a reward recorded withdrawn that the chain does not show withdrawn', () => {
    const [d] = contractDivergences({ ...base, type: 'reward', withdrawn: { recorded: true, onChain: false } });
    assert.deepEqual([d.kind, d.record.type, d.recorded, d.on_chain], ['reward_withdrawn', 'reward', true, false]);
  });
  it("a collection's royalty and contract URI against its record; unread facts conclude nothing", () => {
    const recorded = { royalty_receiver: BOB, royalty_bps: 250, contract_uri: 'ipfs://a' };
    const same = { royalty: { receiver: BOB.toLowerCase(), bps: 250 }, contractUri: 'ipfs://a' };
    assert.deepEqual(contractDivergences({ ...base, info: { recorded, onChain: same } }), []);
    assert.deepEqual(contractDivergences({ ...base, info: { recorded, onChain: { royalty: null, contractUri: null } } }), []);
    const ds = contractDivergences({
      ...base,
      info: { recorded, onChain: { royalty: { receiver: '0x00000000000000000000000000000000000000ff', bps: 100 }, contractUri: 'ipfs://b' } },
    });
    assert.deepEqual(
      ds.map((d) => [d.kind, d.field, d.recorded, d.on_chain, d.fixable]),
      [
        ['collection_royalty', 'royalty_receiver', BOB.toLowerCase(), '0x00000000000000000000000000000000000000ff', false],
        ['collection_royalty', 'royalty_bps', 250, 100, false],
        ['contract_uri', 'contract_uri', 'ipfs://a', 'ipfs://b', false],
      ],
    );
    // No royalty recorded: the chain answers the zero address and 0.
    const none = { ...recorded, royalty_receiver: null, royalty_bps: null };
    assert.deepEqual(
      contractDivergences({
        ...base,
        info: { recorded: none, onChain: { ...same, royalty: { receiver: '0x0000000000000000000000000000000000000000', bps: 0 } } },
      }),
      [],
    );
  });
});

describe('rewards', () => {
  const E18 = 10n ** 18n;
  it('a claim done with the amount the chain paid: nothing; another amount: claim_amount in tokens, fixed to what was paid', () => {
    const ok = claimDivergences({ uid: 'k1', app_uid: 'app', status: 'done', amount: (40n * E18).toString(), paid: 40n * E18, receiptsFound: true });
    assert.deepEqual(ok, { inFlight: false, unverified: false, found: [] });
    const v = claimDivergences({ uid: 'k1', app_uid: 'app', status: 'done', amount: '0', paid: 40n * E18, receiptsFound: true });
    assert.equal(v.inFlight, false);
    const [d] = v.inFlight ? [] : v.found;
    assert.deepEqual([d.kind, d.recorded, d.on_chain, d.fixable], ['claim_amount', '0', '40', true]);
    assert.deepEqual(d.plan, { do: 'claim', claim_uid: 'k1', status_was: 'done', amount_was: '0', paid: (40n * E18).toString() });
  });
  it('a claim failed that the chain paid: claim_status; pending: in flight; no receipt found: unverified, not a divergence', () => {
    const v = claimDivergences({ uid: 'k1', app_uid: 'app', status: 'failed', amount: null, paid: 5n, receiptsFound: true });
    assert.deepEqual(v.inFlight ? [] : v.found.map((d) => [d.kind, d.recorded, d.on_chain]), [['claim_status', 'failed', 'done']]);
    assert.deepEqual(claimDivergences({ uid: 'k1', app_uid: 'app', status: 'pending', amount: null, paid: 5n, receiptsFound: true }), { inFlight: true });
    assert.deepEqual(claimDivergences({ uid: 'k1', app_uid: 'app', status: 'done', amount: '7', paid: null, receiptsFound: false }), {
      inFlight: false,
      unverified: true,
      found: [],
    });
    const none = claimDivergences({ uid: 'k1', app_uid: 'app', status: 'done', amount: '7', paid: null, receiptsFound: true });
    assert.deepEqual(none.inFlight ? [] : none.found.map((d) => [d.kind, d.fixable]), [['claim_amount', false]]);
  });
  it('allocations against usedRef', () => {
    assert.deepEqual(allocationDivergences({ uid: 'l1', app_uid: 'app', status: 'done', used: true }), { inFlight: false, found: [] });
    assert.deepEqual(allocationDivergences({ uid: 'l1', app_uid: 'app', status: 'pending', used: null }), { inFlight: true });
    const v = allocationDivergences({ uid: 'l1', app_uid: 'app', status: 'failed', used: true });
    assert.deepEqual(v.inFlight ? [] : v.found.map((d) => [d.kind, d.recorded, d.on_chain, d.fixable]), [['allocation_status', 'failed', 'allocated', false]]);
  });
  it('balances: the ledger against allocated() once nothing is in flight and the pool is open', () => {
    const c = {
      reward_uid: 'r1',
      user_uid: 'u1',
      app_uid: 'app',
      allocatedDone: 40n * E18,
      claimed: 30n * E18,
      onChain: 10n * E18,
      busy: false,
      withdrawn: false,
    };
    assert.deepEqual(balanceDivergences(c), { inFlight: false, found: [] });
    assert.deepEqual(balanceDivergences({ ...c, busy: true }), { inFlight: true });
    assert.deepEqual(balanceDivergences({ ...c, withdrawn: true, onChain: 0n }), { inFlight: false, found: [] });
    const v = balanceDivergences({ ...c, onChain: 0n });
    const [d] = v.inFlight ? [] : v.found;
    assert.deepEqual([d.kind, d.record, d.recorded, d.on_chain], ['reward_balance', { type: 'reward_balance', uid: 'r1:u1' }, '10', '0']);
    assert.equal(divergenceKey(report(d)), 'reward_balance:reward_balance:r1:u1:allocated_done - claimed');
  });
});

describe('the CLI report', () => {
  const counts = { assets: 3, claims: 0 };
  it('a table of the divergences with both sides, the counts under it', () => {
    const text = verifyText(
      {
        divergences: [
          {
            kind: 'asset_owner',
            app_uid: 'app',
            record: { type: 'asset', uid: 'a1' },
            field: 'owner_address',
            recorded: ALICE,
            on_chain: BOB,
            fixable: true,
            chain_id: 5,
          },
        ],
        checked: counts,
        in_flight: { assets: 1 },
        unverified: {},
      },
      false,
    );
    const [head, row] = text.split('\n');
    assert.match(head, /^CHAIN +KIND +APP +RECORD +FIELD +RECORDED +ON CHAIN +FIXABLE$/);
    assert.match(row, new RegExp(`^5 +asset_owner +app +asset a1 +owner_address +${ALICE} +${BOB} +fixable$`));
    assert.match(text, /checked: 3 assets\nin flight \(not judged\): 1 assets/);
  });
  it('none: says so; with --fix, how many were fixed', () => {
    const text = verifyText({ divergences: [], checked: counts, in_flight: {}, unverified: {} }, true);
    assert.match(text, /^No divergence/);
    assert.match(text, /0 fixed, 0 left$/);
  });
});
