// A mixed workload of every kind of chain work (deployments, mints, edits, transfers, burns,
// allocations, claims), sent over HTTP as a studio would, and the checks that the record and the chain
// agree at the end: read straight from the node (never through the service's providers), so a fault
// injected between the service and the node cannot hide a divergence.
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, parseAbi, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { Db } from '../../src/store/db.js';
import { ApiClient, waitFor } from './env.js';
import { signAppToken } from '../../src/services/apps/tokens.js';

const erc721 = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
]);
const rewardsEvents = parseAbi(['event Claimed(address indexed user, address indexed to, uint256 amount, bytes32 indexed ref)']);
const freshAddress = (): Address => privateKeyToAddress(generatePrivateKey());

export interface WorkloadShape {
  collections: number;
  mints: number;
  edits: number;
  transfers: number;
  burns: number;
  /** Allocations per claiming user (each of 10 tokens). */
  allocationsPerUser: number;
  claims: number;
}

/** The scenario of a provider whose backends lag: 6 collections, a reward, 120 mints, 40 allocations, 10 claims, 15 transfers, 15 burns. */
export const LAGGING_SCENARIO: WorkloadShape = { collections: 6, mints: 120, edits: 10, transfers: 15, burns: 15, allocationsPerUser: 4, claims: 10 };

export interface WorkloadResult {
  appUid: string;
  api: ApiClient;
  collections: string[];
  reward: string;
  assets: string[];
  transfers: string[];
  burns: string[];
  claims: string[];
  /** Why the workload did not settle in time (its requests still pending), or null. */
  unsettled: string | null;
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i], i);
    }),
  );
}

/**
 * Sends the workload to a service at `url` (its admin API with `operatorToken`) and waits until every
 * request has settled (nothing pending), within `settleMs`.
 */
export async function runWorkload(
  urls: string | string[],
  operatorToken: string,
  shape: WorkloadShape,
  chainId: number,
  opts: { settleMs?: number; onPhase?: (phase: string) => Promise<void> | void } = {},
): Promise<WorkloadResult> {
  const settleMs = opts.settleMs ?? 240_000;
  const started = Date.now();
  // Progress on stderr: a slow phase is told by its time, not guessed after a timeout.
  const phase = async (what: string) => {
    process.stderr.write(`  workload: ${what} at ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    await opts.onPhase?.(what);
  };
  const bases = typeof urls === 'string' ? [urls] : urls;
  const admin = new ApiClient(`${bases[0]}/admin/v1`, undefined, operatorToken);
  const created = await admin.post('/apps', { name: `Workload ${Date.now()}`, environment: 'development' });
  assert.equal(created.status, 201, created.raw);
  const { uid: appUid, api_key, api_secret } = created.body.data;
  const token = await signAppToken(api_key, api_secret);
  // Writes go to every API process in turn; reads to the first.
  const apis = bases.map((b) => new ApiClient(`${b}/v1`, api_key, token));
  const api = apis[0];
  const via = (i: number) => apis[i % apis.length];

  const collections: string[] = [];
  for (let i = 0; i < shape.collections; i++) {
    const r = await admin.post(`/apps/${appUid}/collections`, { name: `Load ${i}`, symbol: `LD${i}`, editable_assets: true, chain_id: chainId });
    assert.equal(r.status, 201, r.raw);
    collections.push(r.body.data.uid);
  }
  const rw = await admin.post(`/apps/${appUid}/rewards`, { name: 'Gems', token_name: 'Gem', token_symbol: 'GEM', supply: 1_000_000, chain_id: chainId });
  assert.equal(rw.status, 201, rw.raw);
  const reward: string = rw.body.data.uid;

  const users: string[] = [];
  for (let i = 0; i < 30; i++) users.push((await api.post('/user', {})).body.data.uid);
  await waitFor(
    'collections and the reward deployed',
    async () => {
      const states = await Promise.all([...collections.map((c) => api.get(`/collection/${c}`)), api.get(`/reward/${reward}`)]);
      return states.every((s) => s.body?.data?.status === 'deployed');
    },
    settleMs,
    500,
  );

  await phase('contracts deployed');
  const assets: string[] = new Array(shape.mints);
  await pool(
    Array.from({ length: shape.mints }, (_, i) => i),
    8,
    async (i) => {
      const r = await api.post('/asset', {
        user_uid: users[i % users.length],
        collection_uid: collections[i % collections.length],
        asset_external_id: `w-${i}`,
        data: { name: `Item ${i}`, unique_name: false, image_url: 'https://example.com/i.png', store_image_on_ipfs: false },
      });
      assert.equal(r.status, 201, r.raw);
      assets[i] = r.body.data.uid;
    },
  );
  const claimers = users.slice(0, shape.claims);
  const allocations: string[] = [];
  await pool(
    claimers.flatMap((u) => Array.from({ length: shape.allocationsPerUser }, (_, k) => ({ u, k }))),
    8,
    async ({ u, k }) => {
      const r = await api.post('/reward/allocate', { reward_uid: reward, to_user_uid: u, amount: 10, nonce: `${u}-${k}` });
      assert.equal(r.status, 201, r.raw);
      allocations.push(r.body.data.uid);
    },
  );
  await phase('mints and allocations accepted');
  await waitFor(
    'every asset minted',
    async () => (await Promise.all(assets.map((a) => api.get(`/asset/${a}`)))).every((r) => r.body.data.is_minted),
    settleMs,
    500,
  );

  await phase('every asset minted');
  // Edits, transfers and burns of distinct assets, each by its owner.
  const pick = (from: number, n: number) => assets.slice(from, from + n).map((uid, k) => ({ uid, user: users[(from + k) % users.length] }));
  await pool(pick(0, shape.edits), 4, async ({ uid }) => {
    const r = await api.call('PUT', `/asset/${uid}`, {
      data: { name: 'Edited', unique_name: false, image_url: 'https://example.com/e.png', attributes: [{ trait_type: 'lvl', value: 2 }] },
    });
    assert.equal(r.status, 200, r.raw);
  });
  const transfers: string[] = [];
  await pool(pick(shape.edits, shape.transfers), 4, async ({ uid, user }, i) => {
    const r = await via(i).post('/transfer', { asset_uid: uid, from_user_uid: user, to_address: freshAddress() });
    assert.equal(r.status, 201, r.raw);
    transfers.push(r.body.data.uid);
  });
  const burns: string[] = [];
  await pool(pick(shape.edits + shape.transfers, shape.burns), 4, async ({ uid, user }, i) => {
    const r = await via(i).post('/burn', { asset_uid: uid, from_user_uid: user });
    assert.equal(r.status, 201, r.raw);
    burns.push(r.body.data.uid);
  });
  await waitFor(
    'every allocation done',
    async () => (await Promise.all(allocations.map((a) => api.get(`/reward/allocate/${a}`)))).every((r) => r.body.data.status === 'done'),
    settleMs,
    500,
  );
  await phase('allocations done');
  const claims: string[] = [];
  await pool(claimers, 4, async (u) => {
    const r = await api.post('/reward/claim', { reward_uid: reward, from_user_uid: u, to_address: freshAddress() });
    assert.equal(r.status, 201, r.raw);
    claims.push(r.body.data.uid);
  });
  const unsettled = await waitFor(
    'every transfer, burn, edit and claim settled',
    async () => {
      const all = await Promise.all([
        ...transfers.map((x) => api.get(`/transfer/${x}`)),
        ...burns.map((x) => api.get(`/burn/${x}`)),
        ...claims.map((x) => api.get(`/reward/claim/${x}`)),
      ]);
      const editing = await Promise.all(assets.slice(0, shape.edits).map((a) => api.get(`/asset/${a}`)));
      return all.every((r) => r.body.data.status !== 'pending') && editing.every((r) => !r.body.data.is_editing);
    },
    settleMs,
    500,
  ).then(
    () => null,
    (err: Error) => err.message,
  );
  await phase(unsettled ? 'not settled' : 'settled');
  return { appUid, api, collections, reward, assets, transfers, burns, claims, unsettled };
}

/**
 * The record and the chain agree: each contract deployed once, each token minted once, every owner,
 * burn, transfer and claim as the chain shows, and no transaction judged dropped that the chain mined.
 */
export async function assertChainAgrees(db: Db, nodeUrl: string, w: WorkloadResult): Promise<void> {
  const rpc = createPublicClient({ transport: http(nodeUrl) });
  const problems: string[] = [];
  if (w.unsettled) problems.push(w.unsettled);
  for (const [kind, uids] of [
    ['transfer', w.transfers],
    ['burn', w.burns],
    ['reward/claim', w.claims],
  ] as const) {
    for (const uid of uids) {
      const r = (await w.api.get(`/${kind}/${uid}`)).body.data;
      if (r.status === 'pending') problems.push(`${kind} ${uid} still pending`);
    }
  }

  // Deployments: one contract created per collection and reward, under any hash it was ever sent with.
  const deploys = await db.selectFrom('chain_txs').selectAll().where('kind', 'in', ['collection.deploy', 'reward.deploy']).execute();
  const created = new Map<string, string[]>();
  for (const d of deploys) {
    for (const hash of new Set([d.hash, ...(JSON.parse(d.prior_hashes) as string[])])) {
      const r = await rpc.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
      if (r?.status === 'success' && r.contractAddress) created.set(d.ref, [...(created.get(d.ref) ?? []), r.contractAddress.toLowerCase()]);
    }
  }
  const contracts = [
    ...(await db.selectFrom('collections').select(['uid', 'contract_address']).where('uid', 'in', w.collections).execute()),
    ...(await db.selectFrom('rewards').select(['uid', 'contract_address']).where('uid', '=', w.reward).execute()),
  ];
  for (const c of contracts) {
    const on = created.get(c.uid) ?? [];
    if (on.length !== 1) problems.push(`${c.uid}: ${on.length} contracts deployed (${on.join(', ')})`);
    else if (on[0] !== c.contract_address) problems.push(`${c.uid}: recorded at ${c.contract_address}, deployed at ${on[0]}`);
  }

  // Tokens: minted once each; owner and burn as on chain.
  const rows = await db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select(['assets.uid', 'assets.token_id', 'assets.owner_address', 'assets.is_burned', 'assets.mint_status', 'collections.contract_address'])
    .where('assets.uid', 'in', w.assets)
    .execute();
  for (const contract of new Set(rows.map((r) => r.contract_address))) {
    const logs = await rpc.getContractEvents({ address: contract as Address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
    const mints = logs.filter((l) => l.args.from === '0x0000000000000000000000000000000000000000').map((l) => Number(l.args.tokenId));
    if (new Set(mints).size !== mints.length) problems.push(`${contract}: a token minted twice`);
    for (const a of rows.filter((r) => r.contract_address === contract)) {
      if (a.mint_status !== 'minted') problems.push(`asset ${a.uid}: ${a.mint_status}`);
      if (mints.filter((id) => id === a.token_id).length !== 1)
        problems.push(`asset ${a.uid}: token ${a.token_id} minted ${mints.filter((id) => id === a.token_id).length} times`);
      const owner = await rpc
        .readContract({ address: contract as Address, abi: erc721, functionName: 'ownerOf', args: [BigInt(a.token_id)] })
        .then((o) => o.toLowerCase())
        .catch(() => null);
      if (a.is_burned === 1 && owner !== null) problems.push(`asset ${a.uid}: recorded burned, owned on chain by ${owner}`);
      if (a.is_burned === 0 && owner !== a.owner_address) problems.push(`asset ${a.uid}: recorded owner ${a.owner_address}, on chain ${owner ?? 'no token'}`);
    }
  }

  // Claims: the recorded amount is what the chain paid to the claim's address.
  const reward = await db.selectFrom('rewards').select(['contract_address']).where('uid', '=', w.reward).executeTakeFirstOrThrow();
  const claimed = parseEventLogs({
    abi: rewardsEvents,
    logs: await rpc.getLogs({ address: reward.contract_address as Address, fromBlock: 0n }),
    eventName: 'Claimed',
  });
  for (const uid of w.claims) {
    const c = (await w.api.get(`/reward/claim/${uid}`)).body.data;
    const paid = claimed.filter((l) => l.args.to.toLowerCase() === c.to_address.toLowerCase()).reduce((s, l) => s + l.args.amount, 0n);
    if (BigInt(Math.round(c.amount * 1e6)) * 10n ** 12n !== paid) problems.push(`claim ${uid}: recorded ${c.amount}, paid ${paid} wei`);
  }

  // No transaction judged dropped or reverted that the chain shows mined successfully.
  const failed = await db.selectFrom('chain_txs').selectAll().where('status', '=', 'reverted').execute();
  for (const f of failed) {
    for (const hash of new Set([f.hash, ...(JSON.parse(f.prior_hashes) as string[])])) {
      const r = await rpc.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
      if (r?.status === 'success' && r.from.toLowerCase() !== r.to?.toLowerCase())
        problems.push(`tx ${f.id} (${f.kind}) recorded reverted (${f.error}), mined with status 1 as ${hash}`);
    }
  }
  // What a failure needs to be followed in the logs: the action (ref), the account, the nonce and the hashes.
  const open = await db
    .selectFrom('chain_txs')
    .select(['id', 'kind', 'status', 'ref', 'from_address', 'nonce', 'hash', 'prior_hashes', 'created_at', 'updated_at'])
    .where('handled', '=', 0)
    .execute();
  if (open.length) problems.push(`${open.length} transactions still without an outcome: ${JSON.stringify(open.slice(0, 5))}`);
  assert.deepEqual(problems, [], `the record and the chain disagree:\n${problems.join('\n')}`);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * What an operator runs to prove it: `mintworks chain verify --chain <id> --json` against the
 * installation (`env`: its settings) exits 0 and names no divergence.
 */
export async function assertVerifyClean(env: Record<string, string>, chainId: number): Promise<void> {
  const argv = [path.join(root, 'bin/mintworks.js'), 'chain', 'verify', '--chain', String(chainId), '--json'];
  let code = 0;
  let stdout = '';
  try {
    ({ stdout } = await promisify(execFile)(process.execPath, argv, { env: { ...process.env, LOG_LEVEL: 'silent', ...env }, maxBuffer: 64 << 20 }));
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    code = e.code;
    stdout = e.stdout;
    assert.ok(stdout, `chain verify printed nothing (exit ${e.code}): ${e.stderr}`);
  }
  const report = JSON.parse(stdout) as { divergences?: unknown[] };
  assert.deepEqual(report.divergences, [], `chain verify found divergences: ${stdout.slice(0, 2000)}`);
  assert.equal(code, 0, `chain verify exited ${code}: ${stdout.slice(0, 2000)}`);
}
