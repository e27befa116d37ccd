// KEY_CUSTODY=pkcs11 on a SoftHSM2 token made by this test: the whole asset lifecycle (mint, edit,
// transfer, burn, deposits) plus rewards runs with the chain accounts' keys in the token; the token
// holds them as private EC keys that are sensitive and never extractable; DATA_DIR has no master.key;
// a wallet export decrypts (with @hpke/core, as a user would) to the wallet's key and is in the audit
// log; `mintworks keys rotate-master` (a separate process) during a burst of 1,000 creates loses
// nothing; and after all of it no private key, seed or master key is anywhere in DATA_DIR.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import { ApiClient, tempDir, waitFor } from '../helpers/env.js';
import type { TestService } from '../helpers/service.js';
import { initSoftHsmToken, listPrivateKeys } from '../helpers/softhsm.js';
import { lifecycleSuite } from './lifecycle-suite.js';
import { createReward } from '../../src/services/rewards/index.js';
import { sealedKeyCounts } from '../../src/custody/reseal.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const token = initSoftHsmToken();
const OPERATOR = 'operator-token-for-the-custody-test-0123456789';
const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });
const erc20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/** Runs the CLI (a process of its own, on the same DATA_DIR and token); `onLine` sees its stderr lines. */
function cli(t: TestService, args: string[], onLine: (line: string) => void = () => {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], {
      env: { ...process.env, ...token.env, DATA_DIR: t.dataDir, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => {
      const before = stderr.length;
      stderr += d;
      for (const line of stderr
        .slice(stderr.lastIndexOf('\n', before) + 1)
        .split('\n')
        .slice(0, -1))
        onLine(line);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Every file under `dir` (the SQLite database and its WAL included). */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

lifecycleSuite('sqlite', {
  title: 'with KEY_CUSTODY=pkcs11 (SoftHSM2)',
  env: { ...token.env, OPERATOR_TOKEN: OPERATOR },
  more: (service) => {
    describe('custody in the HSM', () => {
      const admin = () => new ApiClient(`${service().svc.url}/admin/v1`, undefined, OPERATOR);
      let app: Awaited<ReturnType<TestService['newApp']>>;
      let collection: string;
      const exported: { user: string; address: string; key: string }[] = [];

      const newUserWithWallet = async () => {
        const user = (await app.api.post('/user', {})).body.data.uid as string;
        const d = await app.api.get(`/deposit?user_uid=${user}&collection_uid=${collection}`);
        assert.equal(d.status, 200, d.raw);
        return { user, wallet: d.body.data.wallet_address as string };
      };

      it('the chain accounts are key pairs in the token: private EC keys, sensitive, never extractable; no master.key', async () => {
        const t = service();
        app = await t.newApp();
        collection = await t.newCollection(app.uid, false);
        const recorded = await t.svc.ctx.db.selectFrom('custody_keys').selectAll().execute();
        const addresses = [t.svc.ctx.keys.deployer(), ...t.svc.ctx.sender!.relayers].map((a) => a.address.toLowerCase());
        assert.deepEqual(
          recorded.map((r) => r.address).sort(),
          [...addresses].sort(),
          'the database records the address of each HSM key, and nothing else of it',
        );
        const keys = listPrivateKeys(token);
        for (const r of recorded) {
          const k = keys.find((x) => x.label === r.label);
          assert.ok(k, `the token holds ${r.label}`);
          assert.equal(k.type, 'EC');
          assert.match(k.access, /(^|, )sensitive/);
          assert.match(k.access, /never extractable/);
        }
        assert.equal(fs.existsSync(path.join(t.dataDir, 'master.key')), false, 'no master.key in DATA_DIR');
        assert.equal(t.svc.ctx.keys.chainKeysInHsm, true);
      });

      it('rewards: allocate and claim, paid by the HSM relayers', async () => {
        const t = service();
        const { uid: reward } = await createReward(t.svc.ctx, app.uid, {
          name: 'Points',
          token_name: 'Points',
          token_symbol: 'PTS',
          supply: '1000',
          description: null,
        });
        const r = await waitFor(
          'reward deployed',
          async () => ((await app.api.get(`/reward/${reward}`)).body.data.status === 'deployed' ? (await app.api.get(`/reward/${reward}`)).body.data : null),
          30_000,
        );
        const { user } = await newUserWithWallet();
        const a = await app.api.post('/reward/allocate', { reward_uid: reward, to_user_uid: user, amount: 12.5, nonce: 'n1' });
        assert.equal(a.status, 201, a.raw);
        await waitFor('allocated', async () => (await app.api.get(`/reward/allocate/${a.body.data.uid}`)).body.data.status === 'done', 30_000);
        const to = privateKeyToAddress(generatePrivateKey());
        const c = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: to });
        assert.equal(c.status, 201, c.raw);
        await waitFor('claimed', async () => (await app.api.get(`/reward/claim/${c.body.data.uid}`)).body.data.status === 'done', 30_000);
        const rpc = createPublicClient({ transport: http(t.svc.chain!.rpcUrl) });
        assert.equal(
          await rpc.readContract({ address: r.contract_address as Address, abi: erc20, functionName: 'balanceOf', args: [to] }),
          12_500_000_000_000_000_000n,
        );
      });

      it('wallet export: HPKE to the recipient key decrypts to the wallet key; marked, announced, audited', async () => {
        const t = service();
        const { user, wallet } = await newUserWithWallet();
        const recipient = await suite.kem.generateKeyPair();
        const pub = Buffer.from(await suite.kem.serializePublicKey(recipient.publicKey)).toString('base64url');
        const r = await admin().post(`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: pub });
        assert.equal(r.status, 200, r.raw);
        assert.deepEqual(Object.keys(r.body.data), ['address', 'enc', 'ciphertext']);
        assert.equal(r.body.data.address, wallet);
        const ctx = await suite.createRecipientContext({
          recipientKey: recipient.privateKey,
          enc: Buffer.from(r.body.data.enc, 'base64url'),
          info: new TextEncoder().encode('mintworks wallet export v1'),
        });
        const key = new TextDecoder().decode(await ctx.open(Buffer.from(r.body.data.ciphertext, 'base64url')));
        assert.match(key, /^0x[0-9a-f]{64}$/);
        assert.equal(privateKeyToAccount(key as `0x${string}`).address.toLowerCase(), wallet, 'the exported key is the key of the wallet address');
        exported.push({ user, address: wallet, key: key.slice(2) });

        const listed = (await admin().get(`/apps/${app.uid}/users`)).body.data.find((u: { uid: string }) => u.uid === user);
        assert.ok(listed.wallet_exported_at, 'the management API shows when the wallet was exported');
        const event = await t.svc.ctx.db
          .selectFrom('events')
          .selectAll()
          .where('type', '=', 'user.wallet_exported')
          .where('app_uid', '=', app.uid)
          .executeTakeFirst();
        assert.ok(event, 'user.wallet_exported event');
        assert.equal(JSON.parse(event.payload).user.uid, user);
        const audit = (await admin().get('/audit?action=wallet.exported')).body.data;
        assert.equal(audit.length, 1);
        assert.equal(audit[0].user_uid, user);
        assert.equal(audit[0].app_uid, app.uid);
        assert.equal(audit[0].actor, 'operator_token');
        assert.equal(audit[0].details.address, wallet);
        assert.doesNotMatch(JSON.stringify(audit), new RegExp(key.slice(2)), 'the audit log holds no key');
      });

      it('wallet export from the CLI: the recipient key from a file (raw bytes), the same sealed key, audited as the CLI', async () => {
        const t = service();
        const { user, wallet } = await newUserWithWallet();
        const recipient = await suite.kem.generateKeyPair();
        const keyFile = path.join(tempDir(), 'recipient.key');
        fs.writeFileSync(keyFile, Buffer.from(await suite.kem.serializePublicKey(recipient.publicKey)));
        const r = await cli(t, ['wallet', 'export', '--app', app.uid, '--user', user, '--recipient-key', keyFile, '--json']);
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout);
        assert.equal(out.address, wallet);
        const ctx = await suite.createRecipientContext({
          recipientKey: recipient.privateKey,
          enc: Buffer.from(out.enc, 'base64url'),
          info: new TextEncoder().encode('mintworks wallet export v1'),
        });
        const key = new TextDecoder().decode(await ctx.open(Buffer.from(out.ciphertext, 'base64url')));
        assert.equal(privateKeyToAccount(key as `0x${string}`).address.toLowerCase(), wallet);
        exported.push({ user, address: wallet, key: key.slice(2) });
        const audit = (await admin().get(`/audit?action=wallet.exported&app_uid=${app.uid}`)).body.data;
        assert.equal(audit[0].user_uid, user);
        assert.equal(audit[0].actor, 'cli');
        const bad = await cli(t, ['wallet', 'export', '--app', app.uid, '--user', user, '--recipient-key', path.join(t.dataDir, 'nope'), '--json']);
        assert.equal(bad.code, 2);
        assert.match(JSON.parse(bad.stdout).error, /recipient-key/);
      });

      it('wallet export validates: bad keys, unknown user or App, no wallet, unknown fields, no token', async () => {
        const { user } = await newUserWithWallet();
        const bare = (await app.api.post('/user', {})).body.data.uid;
        const good = Buffer.alloc(32, 9).toString('base64url');
        const cases: [string, unknown, number, string][] = [
          [`/apps/${app.uid}/users/${user}/wallet-export`, {}, 400, 'validation_error'],
          [`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: 'not base64!' }, 400, 'validation_error'],
          [`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: Buffer.alloc(31).toString('base64url') }, 400, 'validation_error'],
          [`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: good, extra: 1 }, 400, 'validation_error'],
          [`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: good, chain_id: 'x' }, 400, 'validation_error'],
          [`/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: good, chain_id: 999 }, 400, 'client_error'],
          [`/apps/${app.uid}/users/${bare}/wallet-export`, { recipient_public_key: good }, 400, 'client_error'],
          [`/apps/${app.uid}/users/999999999999/wallet-export`, { recipient_public_key: good }, 404, 'client_error'],
          [`/apps/nope/users/${user}/wallet-export`, { recipient_public_key: good }, 404, 'client_error'],
        ];
        for (const [p, body, status, type] of cases) {
          const r = await admin().post(p, body);
          assert.equal(r.status, status, `${p} ${JSON.stringify(body)}: ${r.raw}`);
          assert.equal(r.body.success, false);
          assert.equal(r.body.error.type, type, r.raw);
        }
        const anonymous = await new ApiClient(`${service().svc.url}/admin/v1`).post(`/apps/${app.uid}/users/${user}/wallet-export`, {
          recipient_public_key: good,
        });
        assert.equal(anonymous.status, 401);
        const exportedUsers = await service()
          .svc.ctx.db.selectFrom('users')
          .select('uid')
          .where('wallet_exported_at', 'is not', null)
          .where('app_uid', '=', app.uid)
          .execute();
        assert.equal(exportedUsers.length, exported.length, 'refused exports mark nobody');
      });

      it('rotate-master (another process) during a burst of 1,000 creates: every request 201, every asset minted, every secret re-sealed', async () => {
        const t = service();
        const { user } = await newUserWithWallet();
        const before = t.svc.ctx.box.currentKeyId;
        let sent = 0;
        const statuses: number[] = [];
        const uids: string[] = [];
        const wave = async (n: number) => {
          const jobs = Array.from({ length: n }, () => sent++).map(async (i) => {
            const r = await app.api.post('/asset', {
              user_uid: user,
              collection_uid: collection,
              asset_external_id: `burst-${i}`,
              data: { name: 'Burst', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
            });
            statuses.push(r.status);
            if (r.status === 201) uids.push(r.body.data.uid);
          });
          await Promise.all(jobs);
        };
        // A wave of creates at each step of the rotation (the CLI reports them on stderr).
        const waves: Promise<void>[] = [wave(250)];
        const rotation = cli(t, ['keys', 'rotate-master'], (line) => {
          if (/stored|in use|re-sealed/.test(line)) waves.push(wave(250));
        });
        const done = await rotation;
        await Promise.all(waves);
        assert.equal(done.code, 0, done.stderr);
        assert.equal(sent, 1000, `the rotation reported its three steps: ${done.stderr}`);
        assert.deepEqual([...new Set(statuses)], [201], 'every create answered 201');
        await waitFor(
          'all 1,000 minted',
          async () => {
            const r = await t.svc.ctx.db
              .selectFrom('assets')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('uid', 'in', uids)
              .where('mint_status', '=', 'minted')
              .executeTakeFirstOrThrow();
            return Number(r.n) === 1000;
          },
          120_000,
          250,
        );
        // The service learned the new key without a restart, and nothing is sealed with the old one.
        await waitFor('service on the new key', async () => t.svc.ctx.box.currentKeyId !== before, 10_000);
        const counts = await sealedKeyCounts(t.svc.ctx.db);
        assert.deepEqual([...counts.keys()], [t.svc.ctx.box.currentKeyId]);
        // The process re-reads its keys every 2 s: the old one goes at the read after the rotation ended.
        await waitFor('the old key dropped from memory too', async () => !t.svc.ctx.box.has(before), 10_000);
        // The API still authenticates with the re-sealed secret.
        assert.equal((await app.api.get(`/user/${user}`)).status, 200);
        const audit = (await admin().get('/audit?action=master_key.rotated')).body.data;
        assert.equal(audit.length, 1);
        assert.equal(audit[0].actor, 'cli');
      });

      it('nothing in DATA_DIR opens a key: no master key, no seed, no wallet key, in the clear anywhere', async () => {
        const t = service();
        const box = t.svc.ctx.box as unknown as { keys: Map<string, Buffer> };
        const seed = t.svc.ctx.box.open((await t.svc.ctx.db.selectFrom('meta').select('value').where('key', '=', 'seed').executeTakeFirstOrThrow()).value);
        const users = await t.svc.ctx.db.selectFrom('users').select('uid').where('wallet_address', 'is not', null).execute();
        const needles = new Map<string, string>();
        for (const [id, k] of box.keys) {
          needles.set(`master key ${id} (hex)`, k.toString('hex'));
          needles.set(`master key ${id} (base64)`, k.toString('base64'));
          needles.set(`master key ${id} (raw)`, k.toString('latin1'));
        }
        needles.set('seed mnemonic', seed);
        for (const { uid } of users) {
          const k = Buffer.from(t.svc.ctx.keys.user(uid).getHdKey().privateKey!);
          needles.set(`wallet key of ${uid} (hex)`, k.toString('hex'));
          needles.set(`wallet key of ${uid} (raw)`, k.toString('latin1'));
        }
        for (const e of exported) assert.equal(needles.get(`wallet key of ${e.user} (hex)`), e.key, 'the exported key is one of the needles');
        assert.ok(users.length >= 5 && box.keys.size >= 1);
        const files = filesUnder(t.dataDir);
        assert.ok(
          files.some((f) => /\.db$|\.sqlite/.test(f)),
          `the database is among the files scanned: ${files.join(', ')}`,
        );
        for (const f of files) {
          const body = fs.readFileSync(f).toString('latin1');
          for (const [what, needle] of needles) assert.equal(body.includes(needle), false, `${what} found in ${path.relative(t.dataDir, f)}`);
        }
      });
    });
  },
});
