// The mint pipeline on a chain with its own block time: an external anvil as chain 80002 with
// `--block-time 2 --gas-limit 30000000`, served through CHAINS. 200 users, a burst of 2,000 assets at
// 64 connections, then the drain. One JSON line per scenario:
//   spike:  maxFeeGwei 1000; three blocks into the drain the base fee jumps to BENCH_SPIKE_GWEI (150),
//           and two blocks later the chain is reorganised 3 blocks deep (anvil_reorg: the blocks are
//           replaced by empty ones; the transactions in them are gone and must be sent again).
//   wait:   the same spike under maxFeeGwei 50: nothing may be signed above 50 gwei, /health must say
//           "waiting for fees" meanwhile, and everything is minted once the base fee is back under.
//   fill:   no spike, blockGasShare 0.9, 2 confirmations.
//   BENCH_CHAIN_SCENARIOS=spike,wait,fill node --import tsx bench/chain.ts
//
// Figures: drain_after_burst_s (the burst's last answer to the last asset marked minted, from the
// service's own rows), the gas used by the blocks of the drain (first to last block with a mint),
// the highest max fee of any transaction seen (mined, or sampled from the node's pool every 250 ms),
// and exactly-once: every accepted asset's token id has one mint Transfer on chain, no id two.
// BENCH_CHAIN_LEGACY=1 leaves the chain settings out of CHAINS (for a version without them).
import { spawn, type ChildProcess } from 'node:child_process';
import { createPublicClient, http, parseAbiItem, type Address, type Hex } from 'viem';
import { anvilBinaryPath } from '../src/chain/anvil.js';
import { ApiClient, freePort, waitFor } from '../test/helpers/env.js';
import { emit, inParallel, launchService, openDbReader, prepareServiceEnv, readDemo, waitDeployed, type DbReader, type ServiceProcess } from './lib.js';

const N = Number(process.env.BENCH_CHAIN_N ?? 2000);
const USERS = Number(process.env.BENCH_CHAIN_USERS ?? 200);
const CONNECTIONS = 64;
const CHAIN_ID = 80002;
const SPIKE_GWEI = BigInt(process.env.BENCH_SPIKE_GWEI ?? 150);
const GWEI = 10n ** 9n;
const LEGACY = process.env.BENCH_CHAIN_LEGACY === '1';

interface Scenario {
  name: string;
  spike: boolean;
  reorg?: boolean;
  maxFeeGwei: number;
  blockGasShare?: number;
  confirmations: number;
}
const SCENARIOS: Record<string, Scenario> = {
  spike: { name: 'spike', spike: true, reorg: true, maxFeeGwei: 1000, confirmations: 0 },
  wait: { name: 'wait', spike: true, maxFeeGwei: 50, confirmations: 0 },
  fill: { name: 'fill', spike: false, maxFeeGwei: 1000, blockGasShare: 0.9, confirmations: 2 },
};

const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');

async function startAnvil(port: number): Promise<ChildProcess> {
  const child = spawn(anvilBinaryPath(), ['--port', String(port), '--chain-id', String(CHAIN_ID), '--block-time', '2', '--gas-limit', '30000000', '--silent'], {
    stdio: 'ignore',
  });
  const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${port}`) });
  await waitFor('anvil', async () => (await rpc.getChainId().catch(() => null)) === CHAIN_ID, 30_000, 100);
  return child;
}

async function run(s: Scenario): Promise<void> {
  const anvilPort = await freePort();
  const anvil = await startAnvil(anvilPort);
  const rpcUrl = `http://127.0.0.1:${anvilPort}`;
  const rpc = createPublicClient({ transport: http(rpcUrl), pollingInterval: 100 });
  const entry = {
    id: CHAIN_ID,
    name: 'Amoy',
    rpc: rpcUrl,
    confirmations: s.confirmations,
    ...(LEGACY ? {} : { maxFeeGwei: s.maxFeeGwei, ...(s.blockGasShare ? { blockGasShare: s.blockGasShare } : {}) }),
  };
  const se = await prepareServiceEnv('sqlite', { EMBEDDED_CHAIN: 'false', CHAINS: JSON.stringify([entry]) });
  let proc: ServiceProcess | null = null;
  let reader: DbReader | null = null;
  try {
    proc = await launchService(se.env, { logName: 'service.log', answering: true });
    const base = proc.base;
    // An external chain: the service does not fund its accounts; the operator (here the bench) does.
    const health = await (await fetch(`${base}/health`)).json();
    for (const a of health.chains[0].accounts)
      await rpc.request({ method: 'anvil_setBalance' as never, params: [a.address, '0x52b7d2dcc80cd2e4000000'] as never });
    const demo = readDemo(se.dataDir);
    const api = new ApiClient(demo.url, demo.apiKey, demo.token);
    await waitDeployed(api, demo.collection, 120_000);
    const users: string[] = [];
    await inParallel(USERS, 8, async () => {
      const u = await api.post('/user', {});
      if (u.status !== 201) throw new Error(`POST /user: ${u.status} ${u.raw}`);
      const d = await api.get(`/deposit?user_uid=${u.body.data.uid}&collection_uid=${demo.collection}`);
      if (d.status !== 200) throw new Error(`GET /deposit: ${d.status} ${d.raw}`);
      users.push(u.body.data.uid);
    });
    const contract = (await api.get(`/collection/${demo.collection}`)).body.data.contract_address as Address;
    const relayers = new Set<string>(
      health.chains[0].accounts.filter((a: { role: string }) => a.role === 'relayer').map((a: { address: string }) => a.address.toLowerCase()),
    );
    reader = await openDbReader(se);
    const r = reader;

    // Watchers over the drain: blocks with mints (and the spike three blocks in), the pool's fees, /health.
    let watching = true;
    let firstMintBlock: bigint | null = null;
    let spikeAt: bigint | null = null;
    let reorgAt: bigint | null = null;
    let maxFeeSeen = 0n;
    let waitingSeen = 0;
    const statuses = new Set<string>();
    const blocks = (async () => {
      let seen = await rpc.getBlockNumber();
      while (watching) {
        const head = await rpc.getBlockNumber({ cacheTime: 0 });
        for (let b = seen + 1n; b <= head; b++) {
          const block = await rpc.getBlock({ blockNumber: b, includeTransactions: true });
          if (firstMintBlock === null && block.transactions.some((t) => t.to?.toLowerCase() === contract.toLowerCase())) firstMintBlock = b;
          // Three blocks into the drain: the spike becomes the base fee of block firstMintBlock + 3.
          if (s.spike && spikeAt === null && firstMintBlock !== null && b >= firstMintBlock + 2n) {
            await rpc.request({ method: 'anvil_setNextBlockBaseFeePerGas' as never, params: [`0x${(SPIKE_GWEI * GWEI).toString(16)}`] as never });
            spikeAt = b + 1n;
          }
          if (s.reorg && reorgAt === null && spikeAt !== null && b >= spikeAt + 2n) {
            await rpc.request({ method: 'anvil_reorg' as never, params: [3, []] as never });
            reorgAt = b;
          }
        }
        seen = head;
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const pool = (async () => {
      while (watching) {
        const content = (await rpc.request({ method: 'txpool_content' as never, params: [] as never }).catch(() => null)) as {
          pending?: Record<string, Record<string, { maxFeePerGas?: Hex }>>;
          queued?: Record<string, Record<string, { maxFeePerGas?: Hex }>>;
        } | null;
        for (const part of [content?.pending, content?.queued])
          for (const [from, txs] of Object.entries(part ?? {}))
            if (relayers.has(from.toLowerCase()))
              for (const t of Object.values(txs)) if (t.maxFeePerGas && BigInt(t.maxFeePerGas) > maxFeeSeen) maxFeeSeen = BigInt(t.maxFeePerGas);
        const h = await fetch(`${base}/health`)
          .then((x) => x.json())
          .catch(() => null);
        const status = h?.chains?.[0]?.status as string | undefined;
        if (status) {
          statuses.add(status.replace(/[\d.]+ gwei >/, 'X gwei >'));
          if (/^waiting for fees/.test(status)) waitingSeen++;
        }
        await new Promise((res) => setTimeout(res, 250));
      }
    })();

    // The burst.
    const burstStart = Date.now();
    await inParallel(N, CONNECTIONS, async (i) => {
      const res = await api.post('/asset', {
        user_uid: users[i % users.length],
        collection_uid: demo.collection,
        asset_external_id: `chain-${i}`,
        data: { name: 'Chain bench', unique_name: false, image_url: 'https://example.com/c.png', store_image_on_ipfs: false },
      });
      if (res.status !== 201) throw new Error(`POST /asset: ${res.status} ${res.raw}`);
    });
    const burstEnd = Date.now();
    const minted = async () => {
      const rows = await r.query<{ mint_status: string; n: unknown }>(
        'select mint_status, count(*) as n from assets where collection_uid = $1 group by mint_status',
        [demo.collection],
      );
      const c = Object.fromEntries(rows.map((x) => [x.mint_status, Number(x.n)]));
      if (c.failed) throw new Error(`${c.failed} assets failed to mint`);
      return c.minted ?? 0;
    };
    await waitFor('every asset minted', async () => (await minted()) >= N, 600_000, 200);
    watching = false;
    await Promise.all([blocks, pool]);
    const [last] = await r.query<{ t: unknown }>("select max(updated_at) as t from assets where collection_uid = $1 and mint_status = 'minted'", [
      demo.collection,
    ]);
    const lastMinted = new Date(String(last.t)).getTime();

    // Exactly once, from the chain: one mint Transfer per accepted asset's token id.
    const logs = await rpc.getLogs({
      address: contract,
      event: transferEvent,
      args: { from: '0x0000000000000000000000000000000000000000' },
      fromBlock: 0n,
      toBlock: 'latest',
    });
    const perId = new Map<bigint, number>();
    for (const l of logs) perId.set(l.args.tokenId!, (perId.get(l.args.tokenId!) ?? 0) + 1);
    const ids = await r.query<{ token_id: unknown }>('select token_id from assets where collection_uid = $1', [demo.collection]);
    const missing = ids.filter((x) => !perId.has(BigInt(Number(x.token_id)))).length;
    const twice = [...perId.values()].filter((n) => n > 1).length;

    // The drain's blocks: gas used against the limit, and every mined transaction's max fee.
    const mintBlocks: { number: number; gasUsed: number; gasLimit: number; baseFeeGwei: number; mints: number }[] = [];
    const txs = await r.query<{ block_number: unknown }>(
      "select block_number from chain_txs where kind = 'asset.mint' and ref = $1 and block_number is not null",
      [demo.collection],
    );
    const lastBlock = BigInt(Math.max(...txs.map((x) => Number(x.block_number))));
    for (let b = firstMintBlock ?? lastBlock; b <= lastBlock; b++) {
      const block = await rpc.getBlock({ blockNumber: b, includeTransactions: true });
      const mints = block.transactions.filter((t) => t.to?.toLowerCase() === contract.toLowerCase());
      for (const t of block.transactions) if (relayers.has(t.from.toLowerCase()) && (t.maxFeePerGas ?? 0n) > maxFeeSeen) maxFeeSeen = t.maxFeePerGas ?? 0n;
      mintBlocks.push({
        number: Number(b),
        gasUsed: Number(block.gasUsed),
        gasLimit: Number(block.gasLimit),
        baseFeeGwei: Number(block.baseFeePerGas ?? 0n) / 1e9,
        mints: mints.length,
      });
    }
    const used = mintBlocks.reduce((a, b) => a + b.gasUsed, 0);
    const limit = mintBlocks.reduce((a, b) => a + b.gasLimit, 0);
    const [txCount] = await r.query<{ n: unknown; bumps: unknown }>(
      "select count(*) as n, sum(bumps) as bumps from chain_txs where kind = 'asset.mint' and ref = $1",
      [demo.collection],
    );
    const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
    emit({
      bench: 'chain',
      scenario: s.name,
      legacy: LEGACY,
      n: N,
      users: USERS,
      max_fee_gwei_setting: LEGACY ? null : s.maxFeeGwei,
      block_gas_share: LEGACY ? null : (s.blockGasShare ?? 0.5),
      confirmations: s.confirmations,
      spike_gwei: s.spike ? Number(SPIKE_GWEI) : null,
      accept_s: round((burstEnd - burstStart) / 1000),
      drain_after_burst_s: round((lastMinted - burstEnd) / 1000),
      minted_on_chain: perId.size,
      missing_on_chain: missing,
      minted_twice: twice,
      mint_transactions: Number(txCount.n),
      replacements: Number(txCount.bumps ?? 0),
      drain_blocks: mintBlocks.length,
      drain_block_gas_used: round(used / limit, 3),
      max_fee_signed_gwei: round(Number(maxFeeSeen) / 1e9, 3),
      health_waiting_for_fees_samples: waitingSeen,
      health_statuses: [...statuses],
      spike_block: spikeAt === null ? null : Number(spikeAt),
      reorg_at_block: reorgAt === null ? null : Number(reorgAt),
      blocks: mintBlocks.map((b) => `${b.number}:${b.mints}tx/${round(b.gasUsed / 1e6, 1)}M@${round(b.baseFeeGwei, 1)}`),
    });
  } finally {
    await proc?.stop();
    await reader?.close();
    anvil.kill('SIGTERM');
    await se.dispose();
  }
}

for (const name of (process.env.BENCH_CHAIN_SCENARIOS ?? 'spike,wait,fill').split(',')) {
  const s = SCENARIOS[name.trim()];
  if (!s) throw new Error(`unknown scenario ${name} (spike, wait, fill)`);
  await run(s);
}
