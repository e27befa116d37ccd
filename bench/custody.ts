// What keeping the chain accounts' keys in an HSM costs the mint pipeline: the mint bench (mint.ts)
// with KEY_CUSTODY=local and with KEY_CUSTODY=pkcs11 on a SoftHSM2 token made here, alternately, in
// the same run on the same machine. The measure is the ratio of their minted/s, median of the rounds
// (target >= 0.9: signing through the HSM costs at most 10 %); the service's CPU per token, less
// disturbed by whatever else the machine runs, is reported beside it. One JSON line per database.
//   BENCH_CUSTODY_ROUNDS=3 BENCH_MINT_N=3000 BENCH_DB=sqlite node --import tsx bench/custody.ts
import { spawn } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { mnemonicToAccount } from 'viem/accounts';
import { generateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { dbsFromArgs, emit, root } from './lib.js';
import { initSoftHsmToken, SOFTHSM_MODULE } from '../test/helpers/softhsm.js';
import { Hsm } from '../src/custody/hsm.js';
import { HsmSigner } from '../src/custody/hsm-signer.js';
import { signTransaction, type Eip1559Tx } from '../src/chain/signing.js';
import type { ChainSigner } from '../src/chain/signer.js';

const ROUNDS = Number(process.env.BENCH_CUSTODY_ROUNDS ?? 3);
const N = process.env.BENCH_MINT_N ?? '3000';

function mintBench(db: string, env: Record<string, string>): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', 'mint.ts')], {
      cwd: root,
      env: { ...process.env, ...env, BENCH_DB: db, BENCH_MINT_N: N, BENCH_MINT_ROUNDS: '1' }, // its own rounds alternate the custodies
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    child.once('error', reject);
    child.once('close', (code) => {
      const line = out.split('\n').find((l) => l.includes('"mint_pipeline"'));
      if (code !== 0 || !line) return reject(new Error(`mint bench (${env.KEY_CUSTODY}) exited ${code}: ${out}`));
      resolve(JSON.parse(line));
    });
  });
}

/**
 * The signing itself, apart from everything else the pipeline does: ms per mint-sized transaction
 * (24 KB of calldata, as a batch of ~270 tokens) signed by a seed-derived key and by a SoftHSM2 key.
 */
async function signingMs(token: ReturnType<typeof initSoftHsmToken>): Promise<{ local: number; hsm: number }> {
  const hsm = Hsm.open({ module: SOFTHSM_MODULE, tokenLabel: token.label, pin: token.pin });
  const hsmSigner = new HsmSigner(hsm, 'bench:signer', hsm.generateEcKey('bench:signer'));
  const local = mnemonicToAccount(generateMnemonic(wordlist, 256));
  const tx = (nonce: number): Eip1559Tx => ({
    type: 'eip1559',
    chainId: 31337,
    nonce,
    to: `0x${'11'.repeat(20)}`,
    data: `0x${randomBytes(24_000).toString('hex')}`,
    gas: 8_000_000n,
    maxFeePerGas: 10n ** 9n,
    maxPriorityFeePerGas: 10n ** 6n,
    value: 0n,
  });
  const time = async (signer: ChainSigner) => {
    const txs = Array.from({ length: 200 }, (_, i) => tx(i));
    for (const t of txs.slice(0, 20)) await signTransaction(signer, t); // warm-up
    const t0 = performance.now();
    for (const t of txs) await signTransaction(signer, t);
    return (performance.now() - t0) / txs.length;
  };
  const r = { local: await time(local), hsm: await time(hsmSigner) };
  hsm.close();
  return r;
}

const token = initSoftHsmToken('mintworks-bench');
const signing = await signingMs(token);
for (const db of dbsFromArgs()) {
  const runs: { local: Record<string, any>[]; pkcs11: Record<string, any>[] } = { local: [], pkcs11: [] };
  for (let i = 0; i < ROUNDS; i++) {
    runs.local.push(await mintBench(db, { KEY_CUSTODY: 'local' }));
    runs.pkcs11.push(await mintBench(db, { ...token.env, SOFTHSM2_CONF: token.conf }));
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  emit({
    bench: 'custody',
    db,
    n: Number(N),
    rounds: ROUNDS,
    local_minted_per_s: runs.local.map((r) => r.minted_per_s),
    pkcs11_minted_per_s: runs.pkcs11.map((r) => r.minted_per_s),
    local_ratio_to_chain: runs.local.map((r) => r.ratio),
    pkcs11_ratio_to_chain: runs.pkcs11.map((r) => r.ratio),
    local_cpu_us_per_token: runs.local.map((r) => r.service_cpu_us_per_token),
    pkcs11_cpu_us_per_token: runs.pkcs11.map((r) => r.service_cpu_us_per_token),
    mints_per_tx: runs.pkcs11.map((r) => r.mints_per_tx),
    // Signing alone: ms per transaction, and what the HSM's extra ms per transaction is of the time the
    // pipeline spends per transaction (its tokens per transaction at the local run's minted/s).
    sign_ms_per_tx_local: round3(signing.local),
    sign_ms_per_tx_hsm: round3(signing.hsm),
    hsm_signing_share_of_pipeline: round3(
      (signing.hsm - signing.local) / ((1000 * median(runs.pkcs11.map((r) => r.mints_per_tx))) / median(runs.local.map((r) => r.minted_per_s))),
    ),
    ratio: round3(median(runs.pkcs11.map((r) => r.minted_per_s)) / median(runs.local.map((r) => r.minted_per_s))),
    cpu_per_token_ratio: round3(median(runs.pkcs11.map((r) => r.service_cpu_us_per_token)) / median(runs.local.map((r) => r.service_cpu_us_per_token))),
  });
}
