// A SoftHSM2 token of its own for a test file: a token directory and configuration in a temporary
// directory, initialised with softhsm2-util. SOFTHSM2_CONF is set for the whole test process before any
// PKCS#11 library is loaded (SoftHSM reads it once, at C_Initialize), and for the CLI processes it runs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './env.js';

export const SOFTHSM_MODULE = process.env.PKCS11_MODULE_UNDER_TEST ?? '/usr/lib/softhsm/libsofthsm2.so';

export interface TestToken {
  conf: string;
  label: string;
  pin: string;
  pinFile: string;
  /** The settings of a service or CLI that uses this token. */
  env: Record<string, string>;
}

export function initSoftHsmToken(label = 'mintworks-test'): TestToken {
  const dir = tempDir('mintworks-hsm-');
  const tokens = path.join(dir, 'tokens');
  fs.mkdirSync(tokens, { mode: 0o700 });
  const conf = path.join(dir, 'softhsm2.conf');
  fs.writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const pin = `pin-${Math.random().toString(36).slice(2, 10)}`;
  execFileSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', `so-${pin}`], {
    env: { ...process.env, SOFTHSM2_CONF: conf },
    stdio: 'pipe',
  });
  const pinFile = path.join(dir, 'pin');
  fs.writeFileSync(pinFile, `${pin}\n`, { mode: 0o600 });
  process.env.SOFTHSM2_CONF = conf;
  return { conf, label, pin, pinFile, env: { KEY_CUSTODY: 'pkcs11', PKCS11_MODULE: SOFTHSM_MODULE, PKCS11_TOKEN_LABEL: label, PKCS11_PIN_FILE: pinFile } };
}

/** The token's private keys as pkcs11-tool (OpenSC, independent of our binding) lists them. */
export function listPrivateKeys(token: TestToken): { label: string; type: string; access: string }[] {
  const out = execFileSync(
    'pkcs11-tool',
    ['--module', SOFTHSM_MODULE, '--token-label', token.label, '--login', '--pin', token.pin, '--list-objects', '--type', 'privkey'],
    { env: { ...process.env, SOFTHSM2_CONF: token.conf }, encoding: 'utf8' },
  );
  return out
    .split(/\n(?=Private Key Object)/)
    .filter((b) => b.startsWith('Private Key Object'))
    .map((b) => ({
      type: /Private Key Object; (\w+)/.exec(b)?.[1] ?? '',
      label: /label:\s+(.*)/.exec(b)?.[1]?.trim() ?? '',
      access: /Access:\s+(.*)/.exec(b)?.[1]?.trim() ?? '',
    }));
}
