// Mint pipeline throughput: a backlog of N accepted assets drained by the workers until every one is
// minted, against the chain's own capacity measured in the same run on the same embedded node. One JSON
// line per database.
//   BENCH_MINT_N=5000 BENCH_MINT_K=50 BENCH_MINT_ROUNDS=3 BENCH_DB=sqlite|postgres node --import tsx bench/mint.ts
//
// Three starts of one installation (same DATA_DIR and database):
//  1. workers on: the Demo collection deploys; 50 users get their wallets (GET /deposit creates the
//     wallet in the request), so the drain measures minting, not wallet creation.
//  2. WORKERS=false: N POST /v1/asset (64 in flight) are accepted and wait as a backlog. Then the
//     baseline runs against this process's embedded node (idle: no workers, no requests): a fresh funded account
//     deploys a MintworksCollection and sends K mintBatch transactions of 100 tokens straight to the
//     node (signed beforehand, nonces counted locally, all sent without waiting, then the last receipt
//     awaited). chain_capacity_per_s = 100*K / seconds: what the node does with nothing else in the way.
//  3. workers on, until the database shows every asset of the collection minted. The drain is timed
//     from the first mint transaction recorded to the last asset marked minted, both from the
//     service's own rows (so the first batch's claim, query and signing, tens of ms, fall outside).
//     Not from the first /health 200: the workers start before the HTTP server listens, and a backlog
//     of thousands is largely minted by then. Not from the spawn either: the process start-up (node,
//     the embedded chain loading its state) is a fixed second or so that is not minting; it is
//     reported apart as spawn_to_all_minted_s.
import {
  createPublicClient,
  defineChain,
  encodeDeployData,
  encodeFunctionData,
  http,
  zeroAddress,
  type Abi,
  type AbiParameter,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { artifact } from '../src/chain/artifacts.js';
import { ApiClient, waitFor } from '../test/helpers/env.js';
import {
  dbsFromArgs,
  type DbKind,
  emit,
  inParallel,
  launchService,
  openDbReader,
  prepareServiceEnv,
  readDemo,
  postgresServerMs,
  serviceCpuSeconds,
  waitDeployed,
  type DbReader,
  type ServiceProcess,
} from './lib.js';

const N = Number(process.env.BENCH_MINT_N ?? process.argv[2] ?? 5000); // the positional form is the old usage
const K = Number(process.env.BENCH_MINT_K ?? 50); // baseline transactions
const PER_TX = 100; // tokens per baseline transaction; the service sizes its own batches (MINT_BATCH_SIZE, gas)
/**
 * BENCH_MINT_USERS=new: an airdrop to new users, each asset for a user of its own with no wallet yet
 * (the drain creates the wallets too); by default 50 users whose wallets exist.
 */
const NEW_USERS = process.env.BENCH_MINT_USERS === 'new';
const USERS = NEW_USERS ? N : 50;
const IN_FLIGHT = 64;
const CHAIN_ID = 31337;
/**
 * Drains per database, each on a fresh installation, the databases in turns. One 5,000-asset drain lasts
 * about a second, and on a shared machine its ratio swung from 0.42 to 0.55 (SQLite) and from 0.30 to
 * 0.43 (PostgreSQL) in five runs of one session: the line reports the median round, with every round's ratio.
 */
const ROUNDS = Number(process.env.BENCH_MINT_ROUNDS ?? 3);

type Drain = Record<string, unknown> & { ratio: number };
const drains = new Map<string, Drain[]>();
for (let i = 0; i < ROUNDS; i++) {
  for (const db of dbsFromArgs()) drains.set(db, [...(drains.get(db) ?? []), await drainOnce(db)]);
}
for (const [db, rounds] of drains) {
  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  emit({ ...median, db, rounds: rounds.length, round_ratios: rounds.map((r) => r.ratio) });
}

/** One installation: its backlog accepted, the chain's capacity measured, then the backlog drained. */
async function drainOnce(db: DbKind): Promise<Drain> {
  const se = await prepareServiceEnv(db);
  let proc: ServiceProcess | null = null;
  let reader: DbReader | null = null;
  try {
    // 1. Setup: Demo collection deployed, users with wallets.
    proc = await launchService(se.env, { logName: 'setup.log' });
    const demo = readDemo(se.dataDir);
    const api = new ApiClient(demo.url, demo.apiKey, demo.token);
    await waitDeployed(api, demo.collection);
    const users: string[] = [];
    await inParallel(USERS, 8, async () => {
      const u = await api.post('/user', {});
      if (u.status !== 201) throw new Error(`POST /user: ${u.status} ${u.raw}`);
      if (!NEW_USERS) {
        const d = await api.get(`/deposit?user_uid=${u.body.data.uid}&collection_uid=${demo.collection}`);
        if (d.status !== 200 || !d.body?.data?.wallet_address) throw new Error(`GET /deposit: ${d.status} ${d.raw}`);
      }
      users.push(u.body.data.uid);
    });
    await proc.stop();

    // 2. The backlog, accepted by the API alone; then the baseline on the same (idle) node.
    proc = await launchService({ ...se.env, WORKERS: 'false' }, { logName: 'accept.log' });
    const a0 = performance.now();
    await inParallel(N, IN_FLIGHT, async (i) => {
      const r = await api.post('/asset', {
        user_uid: users[i % users.length],
        collection_uid: demo.collection,
        asset_external_id: `bench-${i}`,
        data: { name: 'Bench', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
      });
      if (r.status !== 201) throw new Error(`POST /asset: ${r.status} ${r.raw}`);
    });
    const acceptSeconds = (performance.now() - a0) / 1000;
    const capacity = await chainCapacity(`http://127.0.0.1:${se.env.ANVIL_PORT}`, K);
    const acceptRss = proc.peakRssMb();
    await proc.stop();

    // 3. The drain.
    reader = await openDbReader(se);
    const r = reader;
    // What is left: the App's pending assets (only the bench's), counted in their partial index, which
    // shrinks with the backlog. An asset leaves pending minted or failed for good. The poll counted the
    // whole collection by status: every asset read 5 times a second, 10-15 ms of the server each at
    // 10,000 assets, about a tenth of its CPU in a PostgreSQL drain (load of the bench's own in the
    // window it measures); this count takes 10 ms at the start of that drain, 2 ms at 1,000 left.
    const pendingLeft = async () =>
      Number((await r.query<{ n: unknown }>("select count(*) as n from assets where app_uid = $1 and mint_status = 'pending'", [demo.app]))[0].n);
    const counts = async () => {
      const rows = await r.query<{ mint_status: string; n: unknown }>(
        'select mint_status, count(*) as n from assets where collection_uid = $1 group by mint_status',
        [demo.collection],
      );
      return Object.fromEntries(rows.map((x) => [x.mint_status, Number(x.n)]));
    };
    const spawnedAt = Date.now();
    const dbMsBefore = db === 'postgres' ? postgresServerMs() : 0;
    proc = await launchService(se.env, { logName: 'drain.log' });
    await waitFor('no asset pending', async () => (await pendingLeft()) === 0, Number(process.env.BENCH_MINT_TIMEOUT_S ?? Math.max(300, N / 5)) * 1000, 200); // the drain's ends come from the service's records: a slow poll only spares the database
    // The server's CPU from the service's start to the last asset minted (every PostgreSQL process of the
    // machine: the service's backends, its start-up's reads included, and this bench's polls, 4-6 % of it).
    const dbMs = db === 'postgres' ? postgresServerMs() - dbMsBefore : null;
    const c = await counts();
    if (c.failed) throw new Error(`${c.failed} assets failed to mint`);
    if ((c.minted ?? 0) !== N) throw new Error(`${c.minted ?? 0} of ${N} assets minted`);
    // Both ends from the service's own records (ms, the same host clock as Date.now() here).
    const [first] = await r.query<{ t: unknown }>("select min(created_at) as t from chain_txs where kind = 'asset.mint' and ref = $1", [demo.collection]);
    const [last] = await r.query<{ t: unknown }>("select max(updated_at) as t from assets where collection_uid = $1 and mint_status = 'minted'", [
      demo.collection,
    ]);
    const t0 = Number(first.t);
    const t1 = new Date(String(last.t)).getTime();
    const drainSeconds = (t1 - t0) / 1000;
    const mintedPerS = N / drainSeconds;
    const [txs] = await r.query<{ n: unknown }>("select count(*) as n from chain_txs where kind = 'asset.mint' and ref = $1", [demo.collection]);
    if (process.env.BENCH_MINT_TIMELINE === '1') await printTimeline(r, demo.collection, t0);
    const peakRss = proc.peakRssMb(); // sampled just before stopping: the whole drain is behind it
    const cpu = serviceCpuSeconds(proc.pid); // start-up (about a second) included
    await proc.stop();
    proc = null;

    const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
    return {
      bench: 'mint_pipeline',
      db,
      n: N,
      minted_per_s: round(mintedPerS),
      chain_capacity_per_s: round(capacity.perS),
      ratio: round(mintedPerS / capacity.perS, 3),
      chain_transactions: Number(txs.n),
      mints_per_tx: round(N / Number(txs.n)),
      peak_rss_mb: peakRss,
      drain_seconds: round(drainSeconds, 3),
      spawn_to_all_minted_s: round((t1 - spawnedAt) / 1000, 2),
      // CPU of the draining start, start-up included: the service's per token is the figure to compare.
      service_cpu_s: round(cpu.service, 2),
      service_cpu_us_per_token: Math.round((cpu.service * 1e6) / N),
      chain_cpu_s: round(cpu.chain, 2),
      ...(dbMs === null ? {} : { db_cpu_us_per_token: Math.round((dbMs * 1e3) / N) }),
      accept_per_s: round(N / acceptSeconds),
      accept_peak_rss_mb: acceptRss,
      baseline_transactions: K,
      baseline_seconds: round(capacity.seconds, 2),
    };
  } finally {
    await proc?.stop();
    await reader?.close();
    await se.dispose();
  }
}

/**
 * BENCH_MINT_TIMELINE=1: each mint transaction of the drain, ms from the drain's start: recorded, last
 * written (its outcome applied), its block, its tokens and when the last of them was marked minted
 * (stderr, one line each): where a drain's time goes between the transactions.
 */
async function printTimeline(r: DbReader, collection: string, t0: number): Promise<void> {
  const txs = await r.query<{ id: unknown; created_at: unknown; updated_at: unknown; block_number: unknown; from_address: string }>(
    "select id, created_at, updated_at, block_number, from_address from chain_txs where kind = 'asset.mint' and ref = $1 order by id",
    [collection],
  );
  const assets = await r.query<{ mint_tx_id: unknown; n: unknown; t: unknown }>(
    "select mint_tx_id, count(*) as n, max(updated_at) as t from assets where collection_uid = $1 and mint_status = 'minted' group by mint_tx_id",
    [collection],
  );
  const byTx = new Map(assets.map((a) => [Number(a.mint_tx_id), a]));
  for (const tx of txs) {
    const a = byTx.get(Number(tx.id));
    process.stderr.write(
      `tx ${tx.id} ${tx.from_address.slice(0, 6)} recorded +${Number(tx.created_at) - t0} ms, handled +${Number(tx.updated_at) - t0} ms, block ${tx.block_number}, ${a ? Number(a.n) : 0} tokens, last minted +${a ? new Date(String(a.t)).getTime() - t0 : '-'} ms\n`,
    );
  }
}

/**
 * The node's capacity for batch mints: K transactions of PER_TX tokens from one fresh account, signed
 * before the clock starts (signing is not the node's work), sent back to back, timed to the last receipt.
 */
async function chainCapacity(rpcUrl: string, k: number): Promise<{ perS: number; seconds: number }> {
  const chain = defineChain({
    id: CHAIN_ID,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const pub = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 20 });
  const account = privateKeyToAccount(generatePrivateKey());
  await pub.request({ method: 'anvil_setBalance', params: [account.address, '0x52b7d2dcc80cd2e4000000'] } as never);
  const { abi, bytecode } = artifact('MintworksCollection');

  let nonce = await pub.getTransactionCount({ address: account.address, blockTag: 'pending' });
  const fees = await pub.estimateFeesPerGas();
  // Headroom over the current base fee: it must not price any transaction out while the batch lands.
  const txFees = { maxFeePerGas: fees.maxFeePerGas * 4n, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  const sign = (to: Address | undefined, data: Hex, gas: bigint) =>
    account.signTransaction({ chainId: CHAIN_ID, type: 'eip1559', nonce: nonce++, to, data, gas, ...txFees });

  const deploy = await pub.request({
    method: 'eth_sendRawTransaction',
    params: [await sign(undefined, encodeDeployData({ abi, bytecode, args: constructorArgs(abi, account.address) }), 8_000_000n)],
  });
  const deployed = await pub.waitForTransactionReceipt({ hash: deploy });
  if (deployed.status !== 'success' || !deployed.contractAddress) throw new Error('baseline contract deployment failed');
  const contract = deployed.contractAddress;

  // As many recipients as the service's bench users, so storage writes per token are alike.
  const recipients = Array.from({ length: USERS }, () => privateKeyToAccount(generatePrivateKey()).address);
  const calldata = (b: number) => {
    const ids = Array.from({ length: PER_TX }, (_, i) => BigInt(b * PER_TX + i + 1));
    return encodeFunctionData({
      abi,
      functionName: 'mintBatch',
      args: mintBatchArgs(
        abi,
        ids.map((_, i) => recipients[i % recipients.length]),
        ids,
      ) as never,
    });
  };
  // The first batch is the dearest (every recipient's balance goes from zero): its estimate covers all.
  const gas = ((await pub.estimateGas({ account: account.address, to: contract, data: calldata(0) })) * 5n) / 4n;
  const raws: Hex[] = [];
  for (let b = 0; b < k; b++) raws.push(await sign(contract, calldata(b), gas));

  const t0 = performance.now();
  const hashes: Hex[] = [];
  for (const raw of raws) hashes.push(await pub.request({ method: 'eth_sendRawTransaction', params: [raw] }));
  await pub.waitForTransactionReceipt({ hash: hashes.at(-1)!, pollingInterval: 10 });
  const seconds = (performance.now() - t0) / 1000;

  for (const hash of hashes) {
    const r = await pub.getTransactionReceipt({ hash });
    if (r.status !== 'success') throw new Error(`baseline mintBatch ${hash} reverted`);
  }
  return { perS: (PER_TX * k) / seconds, seconds };
}

// The ABI of mintBatch and of the constructor is read from the build, so the baseline encodes whatever
// the contract takes today: recipients and ids as given; any other per-token array (URIs, CID digests)
// is filled with empty/zero values, i.e. development-style mints with no per-token URI; any other
// argument is zero/false.
type Param = AbiParameter & { components?: readonly Param[] };

function zeroOf(p: Param): unknown {
  const arr = /^(.*)\[(\d*)\]$/.exec(p.type);
  if (arr) return arr[2] ? Array.from({ length: Number(arr[2]) }, () => zeroOf({ ...p, type: arr[1] })) : [];
  if (p.type === 'tuple') return Object.fromEntries((p.components ?? []).map((c, i) => [c.name || String(i), zeroOf(c)]));
  if (p.type === 'bool') return false;
  if (p.type === 'address') return zeroAddress;
  if (p.type === 'string') return '';
  if (p.type === 'bytes') return '0x';
  const fixed = /^bytes(\d+)$/.exec(p.type);
  if (fixed) return `0x${'00'.repeat(Number(fixed[1]))}`;
  if (/^u?int\d*$/.test(p.type)) return 0n;
  throw new Error(`bench: no zero value for ABI type ${p.type}`);
}

function functionInputs(abi: Abi, type: 'function' | 'constructor', name?: string): readonly Param[] {
  const item = abi.find((x) => x.type === type && (name === undefined || ('name' in x && x.name === name)));
  if (!item || !('inputs' in item)) throw new Error(`MintworksCollection has no ${name ?? type}`);
  return item.inputs as readonly Param[];
}

/** mintBatch arguments for `to[i]` receiving `ids[i]`, whatever the current ABI adds per token. */
function mintBatchArgs(abi: Abi, to: Address[], ids: bigint[]): unknown[] {
  let haveTo = false;
  let haveIds = false;
  const args = functionInputs(abi, 'function', 'mintBatch').map((p) => {
    if (p.type === 'address[]' && !haveTo) return ((haveTo = true), to);
    if (p.type === 'uint256[]' && !haveIds) return ((haveIds = true), ids);
    if (p.type === 'tuple[]') {
      // One struct per token: its first address is the recipient, its first uint256 the id.
      haveTo = haveIds = true;
      return to.map((addr, i) => {
        let a = false;
        let d = false;
        return Object.fromEntries(
          (p.components ?? []).map((c, j) => {
            const key = c.name || String(j);
            if (c.type === 'address' && !a) return ((a = true), [key, addr]);
            if (c.type === 'uint256' && !d) return ((d = true), [key, ids[i]]);
            return [key, zeroOf(c)];
          }),
        );
      });
    }
    const perToken = /^(.*)\[\]$/.exec(p.type);
    if (perToken) return to.map(() => zeroOf({ ...p, type: perToken[1] }));
    return zeroOf(p);
  });
  if (!haveTo || !haveIds) throw new Error('bench: cannot find the recipients and ids of mintBatch in the ABI');
  return args;
}

/** Constructor arguments: a non-editable collection owned (and operated) by `owner`, no forwarder. */
function constructorArgs(abi: Abi, owner: Address): unknown[] {
  return functionInputs(abi, 'constructor').map((p) => {
    const name = (p.name ?? '').toLowerCase();
    if (p.type === 'string') return name.includes('symbol') ? 'BENCH' : name.includes('uri') ? 'http://127.0.0.1/bench/' : 'Bench';
    // The trusted forwarder must not be the sender: ERC-2771 would read the sender from the calldata's tail.
    if (p.type === 'address') return name.includes('forwarder') ? zeroAddress : owner;
    if (p.type === 'address[]') return [owner];
    return zeroOf(p);
  });
}
