// test:exclusive — measures timing; run with the machine to itself (scripts/run-integration.mjs).
// Exactly once across a power cut: `npm start`'s process, kill -9 of its whole process group (service
// and embedded chain) in the middle of a 2,000-asset burst, start again: every accepted asset gets
// minted, each token id exactly once on chain, each owned by the right wallet.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startServiceGroup, groupAlive } from '../helpers/process-group.js';
import { ApiClient, demoEnv, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const erc721 = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
]);

const BURST = 2000;

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`power cut during a ${BURST}-asset burst (${db})`, () => {
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
      const env = {
        PORT: String(await freePort()),
        ANVIL_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        ...(pgdb ? { DATABASE_URL: pgdb.url } : {}),
      };
      const base = `http://127.0.0.1:${env.PORT}`;
      const healthy = () => waitFor('health 200', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 200);

      child = startServiceGroup(env);
      await healthy();
      const demo = demoEnv(dataDir);
      const api = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
      await waitFor('demo collection deployed', async () => (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 30_000);

      const users = await Promise.all(Array.from({ length: 10 }, () => api.post('/user', {}).then((r) => r.body.data.uid as string)));
      // The burst: 64 requests in flight; the power cut lands in the middle of it, once half the assets
      // got their 201 (the others are refused by the dead process or never sent).
      const pgid = child.pid!;
      const assets: { uid: string; user: string }[] = [];
      let next = 0;
      let cut = false;
      const powerCut = async () => {
        cut = true;
        // The whole process group, service and chain, without a chance to save anything.
        process.kill(-pgid, 'SIGKILL');
        await waitFor('process group gone', async () => !groupAlive(pgid), 10_000, 50);
      };
      let cutDone: Promise<void> | null = null;
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (!cut && next < BURST) {
            const i = next++;
            const r = await api
              .post('/asset', {
                user_uid: users[i % 10],
                collection_uid: demo.MW_COLLECTION,
                asset_external_id: `crash-${i}`,
                data: { name: 'Crash', unique_name: false, image_url: 'https://example.com/c.png', store_image_on_ipfs: false },
              })
              .catch(() => null);
            if (!r) break; // the process is gone
            assert.equal(r.status, 201, r.raw);
            assets.push({ uid: r.body.data.uid as string, user: users[i % 10] });
            if (assets.length >= BURST / 2 && !cut) cutDone = powerCut();
          }
        }),
      );
      await (cutDone ?? powerCut());
      assert.ok(assets.length >= BURST / 2, `${assets.length} accepted before the cut`);

      child = startServiceGroup(env);
      await healthy();
      const accepted = new Set(assets.map((a) => a.uid));
      await waitFor(
        `all ${assets.length} accepted assets minted after restart`,
        async () => {
          // With no chain transaction left unapplied: a row minted before the cut whose transaction the
          // rewound chain lost reads as minted until the tracker finds it lost and mints it again.
          if ((await (await fetch(`${base}/health`)).json()).unconfirmed_transactions !== 0) return false;
          // Per user (10 lists) rather than per asset: every accepted asset must be there, minted.
          const lists = await Promise.all(users.map((u) => api.get(`/asset?user_uid=${u}`).then((r) => r.body.data as { uid: string; is_minted: boolean }[])));
          const mintedUids = new Set(
            lists
              .flat()
              .filter((x) => x.is_minted)
              .map((x) => x.uid),
          );
          return [...accepted].every((u) => mintedUids.has(u));
        },
        180_000,
        1000,
      );
      const minted: any[] = [];
      for (let i = 0; i < assets.length; i += 100)
        minted.push(...(await Promise.all(assets.slice(i, i + 100).map((a) => api.get(`/asset/${a.uid}`).then((r) => r.body.data)))));

      const rewound = fs.readFileSync(path.join(dataDir, 'service.log'), 'utf8').includes('chain no longer has transactions');
      process.stdout.write(
        `# ${db}: ${assets.length} accepted of ${BURST} before the cut, all minted after restart; chain was rewound by the power cut: ${rewound}\n`,
      );
      const coll = (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data;
      const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${env.ANVIL_PORT}`) });
      const logs = await rpc.getContractEvents({ address: coll.contract_address as Address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
      const mints = new Map<bigint, number>();
      for (const l of logs) if (BigInt(l.args.from!) === 0n) mints.set(l.args.tokenId!, (mints.get(l.args.tokenId!) ?? 0) + 1);
      // Assets committed but never answered (in flight at the cut) are minted too: never twice.
      for (const [id, n] of mints) assert.equal(n, 1, `token ${id} minted once`);
      assert.ok(mints.size >= assets.length, `${mints.size} tokens on chain for ${assets.length} accepted assets`);
      const wallets = new Map<string, string>();
      for (const u of users) wallets.set(u, (await api.get(`/user/${u}`)).body.data.wallets[0].address);
      for (let k = 0; k < minted.length; k += 100) {
        await Promise.all(
          minted.slice(k, k + 100).map(async (a, j) => {
            assert.equal(mints.get(BigInt(a.token_id)), 1, `token ${a.token_id} minted exactly once`);
            const owner = (
              await rpc.readContract({ address: coll.contract_address, abi: erc721, functionName: 'ownerOf', args: [BigInt(a.token_id)] })
            ).toLowerCase();
            assert.equal(owner, wallets.get(assets[k + j].user));
            assert.equal(a.owner_address, owner);
          }),
        );
      }
    });
  });
}
