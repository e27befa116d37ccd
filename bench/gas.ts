// Gas per mint, read from the receipts the service recorded (chain_txs.gas_used), for a development App
// (token URI = the collection's baseURI + id) and a production App (per-token IPFS metadata, CIDs
// computed locally: no IPFS node needed). For each: 100 assets in one burst, then 1 asset alone. One
// JSON line; gas does not depend on the database, so SQLite unless BENCH_DB=postgres.
//   node --import tsx bench/gas.ts
//
// Batched = sum(gas_used) / sum(items) over the burst's "big" transactions (>= 10 items; the burst may
// be split, e.g. a first transaction taking what had arrived when the worker woke up), so the fixed cost
// of a transaction (21k, calldata head, cold slots) is shared as in production. Single = gas_used of the
// lone asset's transaction. The burst goes to 10 users (each's first token pays for a fresh balance
// slot, the nine others for an existing one); the lone asset goes to an 11th user who holds nothing
// yet: the dearer case of a single mint, which is what a limit has to hold for.
import fs from 'node:fs';
import path from 'node:path';
import { signAppToken } from '../src/services/apps/tokens.js';
import { ApiClient, waitFor } from '../test/helpers/env.js';
import {
  emit,
  inParallel,
  openDbReader,
  prepareServiceEnv,
  launchService,
  readDemo,
  waitDeployed,
  type DbKind,
  type DbReader,
  type ServiceProcess,
} from './lib.js';

const BURST = 100;
const BURST_USERS = 10;
const BIG_TX = 10;
const db: DbKind = process.env.BENCH_DB === 'postgres' ? 'postgres' : 'sqlite';

const se = await prepareServiceEnv(db);
let proc: ServiceProcess | null = null;
let reader: DbReader | null = null;
try {
  proc = await launchService(se.env);
  // The Demo collection deploying is the sign that the workers are up.
  const demo = readDemo(se.dataDir);
  await waitDeployed(new ApiClient(demo.url, demo.apiKey, demo.token), demo.collection);
  reader = await openDbReader(se);
  const operatorToken = fs.readFileSync(path.join(se.dataDir, 'operator.token'), 'utf8').trim();
  const admin = new ApiClient(`${proc.base}/admin/v1`, undefined, operatorToken);

  const dev = await measure(proc.base, admin, reader, 'development');
  const prod = await measure(proc.base, admin, reader, 'production');
  const items = await measureItems(proc.base, admin, reader, 'development');
  const prodItems = await measureItems(proc.base, admin, reader, 'production');
  emit({
    bench: 'gas',
    db,
    dev_batched_per_token: dev.batchedPerToken,
    dev_single: dev.single,
    prod_batched_per_token: prod.batchedPerToken,
    prod_single: prod.single,
    // ERC-1155 items beside the ERC-721's: gas per minted item (an amount of an item to a user).
    items_batched_per_mint: items.batchedPerMint,
    items_single: items.single,
    // A production App's item: the same mints, and once per item (per edit) setTokenCID, its document's CID.
    items_prod_batched_per_mint: prodItems.batchedPerMint,
    items_prod_single: prodItems.single,
    items_prod_set_cid: prodItems.setCid,
    limits: { prod_batched: 60000, prod_single: 100000, dev_batched: 35000 },
    dev_burst_tx_items: dev.burstItems,
    prod_burst_tx_items: prod.burstItems,
  });
  await proc.stop();
  proc = null;
} finally {
  await proc?.stop();
  await reader?.close();
  await se.dispose();
}

async function measure(base: string, admin: ApiClient, r: DbReader, environment: 'development' | 'production') {
  const created = await admin.post('/apps', { name: `Gas ${environment}`, environment });
  if (created.status !== 201) throw new Error(`POST /admin/v1/apps: ${created.status} ${created.raw}`);
  const app = created.body.data as { uid: string; api_key: string; api_secret: string };
  const api = new ApiClient(`${base}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
  const coll = await admin.post(`/apps/${app.uid}/collections`, { name: `Gas ${environment}`, symbol: 'GAS' });
  if (coll.status !== 201) throw new Error(`POST /admin/v1/apps/${app.uid}/collections: ${coll.status} ${coll.raw}`);
  const collection = coll.body.data.uid as string;
  await waitDeployed(api, collection);

  // Wallets first (GET /deposit creates one in the request), so no mint waits for a wallet job.
  const users: string[] = [];
  for (let i = 0; i <= BURST_USERS; i++) {
    const u = await api.post('/user', {});
    if (u.status !== 201) throw new Error(`POST /user: ${u.status} ${u.raw}`);
    const d = await api.get(`/deposit?user_uid=${u.body.data.uid}&collection_uid=${collection}`);
    if (d.status !== 200) throw new Error(`GET /deposit: ${d.status} ${d.raw}`);
    users.push(u.body.data.uid);
  }
  const create = async (i: number, user: string) => {
    const res = await api.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: `gas-${i}`,
      data: {
        name: 'Gas',
        description: 'Gas bench item',
        unique_name: false,
        image_url: 'https://example.com/gas.png',
        store_image_on_ipfs: false,
        attributes: [{ trait_type: 'power', value: i }],
      },
    });
    if (res.status !== 201) throw new Error(`POST /asset: ${res.status} ${res.raw}`);
  };
  const allMinted = (n: number) =>
    waitFor(
      `${n} ${environment} assets minted`,
      async () => {
        const rows = await r.query<{ mint_status: string; n: unknown }>(
          'select mint_status, count(*) as n from assets where collection_uid = $1 group by mint_status',
          [collection],
        );
        const c = Object.fromEntries(rows.map((x) => [x.mint_status, Number(x.n)]));
        if (c.failed) throw new Error(`${c.failed} ${environment} assets failed to mint`);
        return (c.minted ?? 0) >= n;
      },
      120_000,
      100,
    );

  await inParallel(BURST, BURST, (i) => create(i, users[i % BURST_USERS]));
  await allMinted(BURST);
  await create(BURST, users[BURST_USERS]);
  await allMinted(BURST + 1);

  const txs = (
    await r.query<{ gas_used: unknown; payload: string; status: string }>(
      "select gas_used, payload, status from chain_txs where kind = 'asset.mint' and ref = $1 order by id",
      [collection],
    )
  ).map((t) => {
    if (t.status !== 'mined' || t.gas_used == null) throw new Error(`${environment} mint transaction ${t.status}`);
    return { gas: Number(t.gas_used), items: (JSON.parse(t.payload) as { items: unknown[] }).items.length };
  });
  const lone = txs.at(-1)!;
  if (lone.items !== 1) throw new Error(`the lone ${environment} asset was minted with ${lone.items - 1} others`);
  const burst = txs.slice(0, -1);
  const big = burst.some((t) => t.items >= BIG_TX) ? burst.filter((t) => t.items >= BIG_TX) : burst;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return {
    batchedPerToken: Math.round(sum(big.map((t) => t.gas)) / sum(big.map((t) => t.items))),
    single: lone.gas,
    burstItems: burst.map((t) => t.items),
  };
}

/**
 * Gas per item mint of an ERC-1155 collection, as the ERC-721's is measured: a burst of 100 mints of one
 * item to 10 users who already hold it (each's first mint, before, pays for its balance slot), then one
 * mint alone to an 11th user who holds nothing yet. A production App's item also has its document's CID
 * set on the contract once (`setCid`: that transaction's gas; null for a development App).
 */
async function measureItems(base: string, admin: ApiClient, r: DbReader, environment: 'development' | 'production') {
  const created = await admin.post('/apps', { name: `Gas items ${environment}`, environment });
  const app = created.body.data as { uid: string; api_key: string; api_secret: string };
  const api = new ApiClient(`${base}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
  const coll = await admin.post(`/apps/${app.uid}/collections`, { name: 'Gas items', symbol: 'GAS', standard: 'ERC1155' });
  if (coll.status !== 201) throw new Error(`POST collections (ERC1155): ${coll.status} ${coll.raw}`);
  const collection = coll.body.data.uid as string;
  await waitDeployed(api, collection);
  const made = await api.post('/item', {
    collection_uid: collection,
    item_external_id: 'gas',
    data: { name: 'Gas', image_url: 'https://example.com/gas.png', store_image_on_ipfs: false },
  });
  if (made.status !== 201) throw new Error(`POST /item: ${made.status} ${made.raw}`);
  const item = made.body.data.uid as string;
  const users: string[] = [];
  for (let i = 0; i <= BURST_USERS; i++) users.push((await api.post('/user', {})).body.data.uid);
  let nonce = 0;
  const mint = async (user: string) => {
    const res = await api.post('/item/mint', { item_uid: item, to_user_uid: user, amount: 2, nonce: ++nonce });
    if (res.status !== 201) throw new Error(`POST /item/mint: ${res.status} ${res.raw}`);
  };
  const allDone = (n: number) =>
    waitFor(
      `${n} item mints done`,
      async () => {
        const rows = await r.query<{ n: unknown }>("select count(*) as n from item_mints where item_uid = $1 and status = 'done'", [item]);
        return Number(rows[0].n) >= n;
      },
      120_000,
      100,
    );
  for (let i = 0; i < BURST_USERS; i++) await mint(users[i]);
  await allDone(BURST_USERS);
  const before = Number((await r.query<{ n: unknown }>("select count(*) as n from chain_txs where kind = 'item.mint' and ref = $1", [collection]))[0].n);
  await inParallel(BURST, BURST, (i) => mint(users[i % BURST_USERS]));
  await allDone(BURST_USERS + BURST);
  await mint(users[BURST_USERS]);
  await allDone(BURST_USERS + BURST + 1);
  const txs = (
    await r.query<{ gas_used: unknown; payload: string; status: string }>(
      "select gas_used, payload, status from chain_txs where kind = 'item.mint' and ref = $1 order by id",
      [collection],
    )
  )
    .slice(before)
    .map((t) => ({ gas: Number(t.gas_used), items: (JSON.parse(t.payload) as { items: unknown[] }).items.length }));
  const lone = txs.at(-1)!;
  const burst = txs.slice(0, -1);
  const big = burst.some((t) => t.items >= BIG_TX) ? burst.filter((t) => t.items >= BIG_TX) : burst;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const setCid =
    environment === 'production'
      ? await waitFor(
          'the item CID set on chain',
          async () => {
            const rows = await r.query<{ gas_used: unknown }>("select gas_used from chain_txs where kind = 'item.uri' and ref = $1 and status = 'mined'", [
              item,
            ]);
            return rows.length > 0 ? Number(rows[0].gas_used) : null;
          },
          120_000,
          100,
        )
      : null;
  return { batchedPerMint: Math.round(sum(big.map((t) => t.gas)) / sum(big.map((t) => t.items))), single: lone.gas, setCid };
}
