// Relayer rotation with KEY_CUSTODY=pkcs11 on a SoftHSM2 token made by this test: `mintworks keys
// rotate-relayers` (a process of its own, with its own session on the token) generates the new
// relayers' key pairs in the token under new labels (private EC keys, sensitive, never extractable,
// recorded in custody_keys), the running service loads them by label and they sign the next mints; the
// old keys stay in the token, marked retired in custody_keys.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, type PublicClient } from 'viem';
import { startTestService, type TestService } from '../helpers/service.js';
import { waitFor } from '../helpers/env.js';
import { initSoftHsmToken, listPrivateKeys } from '../helpers/softhsm.js';
import { contractsOf, operatorsOnChain } from '../helpers/rotation.js';
import { defaultChain } from '../../src/config/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const token = initSoftHsmToken('mintworks-rotate');

function cli(t: TestService, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], {
      env: { ...process.env, ...token.env, DATA_DIR: t.dataDir, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('relayer rotation with the keys in an HSM (SoftHSM2)', () => {
  let t: TestService;
  before(async () => {
    t = await startTestService('sqlite', { ...token.env, RELAYER_COUNT: '2' });
  });
  after(async () => t?.stop());

  it('generates the new relayers in the token, and they sign the next mints', async () => {
    const ctx = t.svc.ctx;
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const user = (await app.api.post('/user', {})).body.data.uid as string;
    const mint = async (external: string) => {
      const r = await app.api.post('/asset', {
        user_uid: user,
        collection_uid: collection,
        asset_external_id: external,
        data: { name: 'Key', unique_name: false, image_url: 'https://example.com/k.png', store_image_on_ipfs: false },
      });
      assert.equal(r.status, 201, r.raw);
      await waitFor('minted', async () => (await app.api.get(`/asset/${r.body.data.uid}`)).body.data.is_minted === true, 30_000);
      return (
        await ctx.db
          .selectFrom('assets')
          .innerJoin('chain_txs', 'chain_txs.id', 'assets.mint_tx_id')
          .select('chain_txs.from_address')
          .where('assets.uid', '=', r.body.data.uid)
          .executeTakeFirstOrThrow()
      ).from_address;
    };
    const before = await mint('before');
    const keysBefore = listPrivateKeys(token).map((k) => k.label);

    const run = await cli(t, ['keys', 'rotate-relayers', '--chain', String(defaultChain(ctx).id)]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /\[granting\]/);
    assert.match(run.stderr, /\[done\] done: 2 relayer\(s\) retired/);
    assert.match(run.stdout, /done/);

    const rotation = await ctx.db.selectFrom('relayer_rotations').selectAll().executeTakeFirstOrThrow();
    const fresh = JSON.parse(rotation.new_relayers) as string[];
    const old = JSON.parse(rotation.old_relayers) as string[];
    assert.ok(old.includes(before), 'an old relayer minted before');
    // Two new key pairs in the token, under new labels, private, sensitive, never extractable.
    const added = listPrivateKeys(token).filter((k) => !keysBefore.includes(k.label));
    assert.deepEqual(added.map((k) => k.label.replace(/^mintworks:[0-9a-f]+:/, '')).sort(), ['relayer:2', 'relayer:3']);
    for (const k of added) {
      assert.equal(k.type, 'EC');
      assert.match(k.access, /(^|, )sensitive/);
      assert.match(k.access, /never extractable/);
    }
    const custody = await ctx.db.selectFrom('custody_keys').selectAll().where('role', '=', 'relayer').orderBy('label').execute();
    assert.deepEqual(
      custody
        .filter((k) => k.retired_at === null)
        .map((k) => k.address)
        .sort(),
      [...fresh].sort(),
    );
    assert.deepEqual(
      custody
        .filter((k) => k.retired_at !== null)
        .map((k) => k.address)
        .sort(),
      [...old].sort(),
    );
    // The old keys are still in the token: retired, never deleted.
    assert.equal(listPrivateKeys(token).length, keysBefore.length + 2);

    // The next mints are signed by the new keys.
    for (let i = 0; i < 4; i++) assert.ok(fresh.includes(await mint(`after-${i}`)), 'a new relayer minted');
    const rpc = createPublicClient({ transport: http(t.svc.chain!.rpcUrl) }) as PublicClient;
    for (const c of await operatorsOnChain(rpc, await contractsOf(ctx.db, defaultChain(ctx).id), fresh, old)) {
      assert.deepEqual(c.fresh, [true, true]);
      assert.deepEqual(c.old, [false, false]);
    }
    const status = await cli(t, ['chain', 'status', '--chain', String(defaultChain(ctx).id), '--json']);
    assert.equal(status.code, 0, status.stderr);
    const relayers = (JSON.parse(status.stdout) as { chains: { relayers: { address: string; state: string | null }[] }[] }).chains[0].relayers;
    assert.deepEqual(
      relayers
        .filter((r) => r.state === 'active')
        .map((r) => r.address)
        .sort(),
      [...fresh].sort(),
    );
  });
});
