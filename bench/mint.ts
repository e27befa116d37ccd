// Mint throughput: N assets through the API until all are minted, against a baseline measured in the
// same run on the same embedded chain — N single `mint` transactions sent straight to the node by one
// funded account (no database, no API). Prints one JSON line.
//   node --import tsx bench/mint.ts [N=500]
import { encodeFunctionData, createWalletClient, createPublicClient, http, encodeDeployData, type Address } from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { artifact } from '../src/chain/artifacts.js';
import { startTestService } from '../test/helpers/service.js';
import { waitFor } from '../test/helpers/env.js';

const N = Number(process.argv[2] ?? 500);
const t = await startTestService((process.env.BENCH_DB as 'sqlite' | 'postgres') ?? 'sqlite');
try {
  const rpcUrl = t.svc.chain!.rpcUrl;
  const chain = { id: 31337, name: 'anvil', nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } } as const;
  const pub = createPublicClient({ chain, transport: http(rpcUrl) });

  // Baseline: raw chain capacity for the same number of mints, one transaction each.
  const account = privateKeyToAccount(generatePrivateKey());
  await pub.request({ method: 'anvil_setBalance' as any, params: [account.address, '0x52b7d2dcc80cd2e4000000'] as any });
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) });
  const { abi, bytecode } = artifact('MintworksCollection');
  const deployHash = await wallet.sendTransaction({ data: encodeDeployData({ abi, bytecode, args: ['B', 'B', 'x/', false, account.address, [account.address]] }) });
  const contract = (await pub.waitForTransactionReceipt({ hash: deployHash })).contractAddress as Address;
  let nonce = await pub.getTransactionCount({ address: account.address });
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const b0 = performance.now();
  const hashes = [];
  for (let i = 1; i <= N; i++) {
    hashes.push(await wallet.sendTransaction({ to: contract, data: encodeFunctionData({ abi, functionName: 'mint', args: [to, BigInt(i), ''] }), nonce: nonce++, gas: 120_000n }));
  }
  await pub.waitForTransactionReceipt({ hash: hashes.at(-1)! });
  const baselineMs = performance.now() - b0;

  // Mintworks: N POST /asset over HTTP (64 in flight), then wait until every asset is minted.
  const app = await t.newApp();
  const collection = await t.newCollection(app.uid, false);
  const users = await Promise.all(Array.from({ length: 50 }, () => app.api.post('/user', {}).then((r) => r.body.data.uid as string)));
  const m0 = performance.now();
  const uids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < N) {
        const i = next++;
        const r = await app.api.post('/asset', { user_uid: users[i % users.length], collection_uid: collection, asset_external_id: `b-${i}`, data: { name: 'Bench', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false } });
        if (r.status !== 201) throw new Error(r.raw);
        uids.push(r.body.data.uid);
      }
    }),
  );
  const acceptedMs = performance.now() - m0;
  await waitFor('all minted', async () => {
    const r = await t.svc.ctx.db.selectFrom('assets').select((eb) => eb.fn.countAll<number>().as('n')).where('collection_uid', '=', collection).where('mint_status', '=', 'minted').executeTakeFirstOrThrow();
    return Number(r.n) === N;
  }, 300_000, 100);
  const mintedMs = performance.now() - m0;
  const txs = await t.svc.ctx.db.selectFrom('chain_txs').select((eb) => eb.fn.countAll<number>().as('n')).where('kind', '=', 'asset.mint').where('ref', '=', collection).executeTakeFirstOrThrow();
  console.log(
    JSON.stringify({
      bench: 'mint',
      n: N,
      db: t.svc.ctx.dialect,
      baseline_raw_single_mints_per_s: +(N / (baselineMs / 1000)).toFixed(1),
      api_accept_per_s: +(N / (acceptedMs / 1000)).toFixed(1),
      mintworks_minted_per_s: +(N / (mintedMs / 1000)).toFixed(1),
      ratio_vs_baseline: +(baselineMs / mintedMs).toFixed(2),
      chain_transactions: Number(txs.n),
    }),
  );
} finally {
  await t.stop();
}
