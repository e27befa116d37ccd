// Exactly once across a power cut: `npm start`'s process, kill -9 of its whole process group (service
// and embedded chain) right after 200 assets got their 201, start again: all 200 get minted, each
// token id exactly once on chain, each owned by the right wallet.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { ApiClient, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const erc721 = parseAbi(['function ownerOf(uint256) view returns (address)', 'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);

function startProcess(env: Record<string, string>): ChildProcess {
  // detached: the service leads a process group of its own, with anvil inside it, like `npm start` in a shell.
  const log = fs.openSync(path.join(env.DATA_DIR, 'service.log'), 'a');
  return spawn(process.execPath, [path.join(root, 'dist/main.js')], { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', log, log] });
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`power cut during a 200-asset burst (${db})`, () => {
    const dataDir = tempDir('mintworks-crash-');
    let child: ChildProcess | null = null;
    let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
    after(async () => {
      if (child?.pid && groupAlive(child.pid)) {
        process.kill(-child.pid, 'SIGTERM');
        await waitFor('service stopped', async () => !groupAlive(child!.pid!), 20_000).catch(() => process.kill(-child!.pid!, 'SIGKILL'));
      }
      await pgdb?.drop();
    });

    it('mints every accepted asset exactly once after kill -9 of service and chain', async () => {
      pgdb = db === 'postgres' ? await freshPostgres() : null;
      const env = { PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) };
      const base = `http://127.0.0.1:${env.PORT}`;
      const healthy = () => waitFor('health 200', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 200);

      child = startProcess(env);
      await healthy();
      const demo = Object.fromEntries(
        fs.readFileSync(path.join(dataDir, 'demo.env'), 'utf8').split('\n').filter((l) => /^MW_\w+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      const api = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
      await waitFor('demo collection deployed', async () => (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 30_000);

      const users = await Promise.all(Array.from({ length: 10 }, () => api.post('/user', {}).then((r) => r.body.data.uid as string)));
      const assets = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const r = await api.post('/asset', {
            user_uid: users[i % 10],
            collection_uid: demo.MW_COLLECTION,
            asset_external_id: `crash-${i}`,
            data: { name: 'Crash', unique_name: false, image_url: 'https://example.com/c.png', store_image_on_ipfs: false },
          });
          assert.equal(r.status, 201, r.raw);
          return { uid: r.body.data.uid as string, user: users[i % 10] };
        }),
      );

      // The power cut: the whole process group, service and chain, without a chance to save anything.
      const pgid = child.pid!;
      process.kill(-pgid, 'SIGKILL');
      await waitFor('process group gone', async () => !groupAlive(pgid), 10_000, 50);

      child = startProcess(env);
      await healthy();
      const minted = await waitFor(
        'all 200 minted after restart',
        async () => {
          const all = await Promise.all(assets.map((a) => api.get(`/asset/${a.uid}`).then((r) => r.body.data)));
          return all.every((x) => x.is_minted) ? all : null;
        },
        60_000,
        500,
      );

      const rewound = fs.readFileSync(path.join(dataDir, 'service.log'), 'utf8').includes('chain no longer has transactions');
      process.stdout.write(`# ${db}: all 200 minted after restart; chain was rewound by the power cut: ${rewound}\n`);
      const coll = (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data;
      const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${env.ANVIL_PORT}`) });
      const logs = await rpc.getContractEvents({ address: coll.contract_address as Address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
      const mints = new Map<bigint, number>();
      for (const l of logs) if (BigInt(l.args.from!) === 0n) mints.set(l.args.tokenId!, (mints.get(l.args.tokenId!) ?? 0) + 1);
      assert.equal(mints.size, 200, 'exactly 200 tokens minted on chain');
      const wallets = new Map<string, string>();
      for (const u of users) wallets.set(u, (await api.get(`/user/${u}`)).body.data.wallets[0].address);
      for (const [i, a] of minted.entries()) {
        assert.equal(mints.get(BigInt(a.token_id)), 1, `token ${a.token_id} minted exactly once`);
        const owner = await rpc.readContract({ address: coll.contract_address, abi: erc721, functionName: 'ownerOf', args: [BigInt(a.token_id)] });
        assert.equal(owner, wallets.get(assets[i].user));
        assert.equal(a.owner_address, owner);
      }
    });
  });
}
