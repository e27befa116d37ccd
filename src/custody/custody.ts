// KEY_CUSTODY: where this installation's keys live (docs/custody.md).
//   local   the master key is MASTER_KEY or DATA_DIR/master.key; the chain accounts derive from the seed.
//   pkcs11  an HSM holds the key that wraps the master keys and the chain accounts' private keys; nothing
//           on disk or in the database opens anything without the token.
// Either way the process ends up with a SecretBox holding the master keys, and the chain accounts.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../store/db.js';
import { SecretBox } from '../util/secretbox.js';
import { preparePrivateDir } from '../util/private-dir.js';
import { CHAIN_KEYS_META, type ChainAccounts } from '../chain/keys.js';
import { Hsm, readPin } from './hsm.js';
import { CURRENT_MASTER_KEY, ensureHsmMasterKey, hsmWrapper, keepMasterKeysFresh, loadMasterKeys, rootWrapper, type KeyWrapper } from './master-keys.js';
import { hsmAccount, hsmLabels, type HsmLabels } from './hsm-accounts.js';
import type { HsmSigner } from './hsm-signer.js';

export interface Custody {
  kind: 'local' | 'pkcs11';
  box: SecretBox;
  wrapper: KeyWrapper;
  hsm: Hsm | null;
  /** The chain accounts when they are the HSM's (null: derived from the seed). */
  accounts: ChainAccounts | null;
  /** Stops reading new master keys and closes the HSM session. */
  close(): void;
}

export const masterKeyFile = (config: Pick<Config, 'dataDir'>) => path.join(config.dataDir, 'master.key');

/** MASTER_KEY from the environment, else a key generated once into DATA_DIR (with a loud warning). */
export function loadMasterKey(config: Config, log: Logger): string {
  if (config.masterKeyHex) return config.masterKeyHex;
  const file = masterKeyFile(config);
  if (!fs.existsSync(file)) {
    preparePrivateDir(config.dataDir);
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    log.warn(
      { file },
      'MASTER_KEY is not set: generated one into DATA_DIR. Anyone who can read DATA_DIR can decrypt the wallet seed and API secrets; set MASTER_KEY (openssl rand -hex 32) for production, keep it elsewhere, or use an HSM (KEY_CUSTODY=pkcs11, docs/custody.md).',
    );
  }
  const key = fs.readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(key)) throw new Error(`${file} does not hold a 64-hex-character key (MASTER_KEY)`);
  return key;
}

/** Opens the token named by the PKCS11_* settings. */
export function openHsm(config: Config): Hsm {
  if (!config.pkcs11) throw new Error('PKCS11_MODULE and PKCS11_TOKEN_LABEL are required for the HSM');
  return Hsm.open({ module: config.pkcs11.module, tokenLabel: config.pkcs11.tokenLabel, pin: readPin(config.pkcs11.pin, config.pkcs11.pinFile) });
}

/** The chain accounts in the token: the deployer and RELAYER_COUNT relayers (made on first use). */
export async function hsmChainAccounts(db: Db, hsm: Hsm, labels: HsmLabels, relayerCount: number): Promise<ChainAccounts> {
  const deployer = await hsmAccount(db, hsm, labels.deployer, 'deployer');
  const relayers = [];
  for (let i = 0; i < relayerCount; i++) relayers.push(await hsmAccount(db, hsm, labels.relayer(i), 'relayer'));
  // Relayers a rotation brought in (src/services/relayer-rotation.ts): loaded once by label, then kept.
  const loaded = new Map<number, Promise<HsmSigner>>();
  const relayerAt = (i: number) => {
    let p = loaded.get(i);
    if (!p) {
      p = hsmAccount(db, hsm, labels.relayer(i), 'relayer');
      p.catch(() => loaded.delete(i));
      loaded.set(i, p);
    }
    return p;
  };
  return { deployer, relayers, relayerAt };
}

const metaValue = async (db: Db, key: string) => (await db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst())?.value ?? null;

export async function openCustody(config: Config, db: Db, log: Logger, opts: { watch?: boolean } = {}): Promise<Custody> {
  let hsm: Hsm | null = null;
  let box: SecretBox;
  let wrapper: KeyWrapper;
  let accounts: ChainAccounts | null = null;
  if (config.keyCustody === 'local') {
    if (
      (await metaValue(db, CURRENT_MASTER_KEY)) &&
      (await db.selectFrom('meta').select('value').where('key', 'like', 'master_key:%').executeTakeFirst())?.value.startsWith('hsm:')
    ) {
      throw new Error('this installation keeps its master key in an HSM: set KEY_CUSTODY=pkcs11 and the PKCS11_* settings (docs/custody.md)');
    }
    const root = loadMasterKey(config, log);
    box = new SecretBox(root);
    wrapper = rootWrapper(new SecretBox(root));
    await loadMasterKeys(db, box, wrapper);
  } else {
    const seed = await metaValue(db, 'seed');
    if (seed && !(await metaValue(db, CURRENT_MASTER_KEY))) {
      throw new Error(
        'this installation keeps its master key outside an HSM (KEY_CUSTODY=local): switch it with `mintworks keys migrate --to pkcs11` first (docs/custody.md)',
      );
    }
    hsm = openHsm(config);
    try {
      const labels = await hsmLabels(db);
      wrapper = hsmWrapper(hsm, labels.wrappingKey);
      box = new SecretBox();
      await ensureHsmMasterKey(db, box, wrapper);
      // A new installation keeps its chain accounts in the token; one migrated from local custody keeps
      // the seed-derived ones its contracts know until the operator moves them (docs/custody.md).
      if (!seed)
        await db
          .insertInto('meta')
          .values({ key: CHAIN_KEYS_META, value: 'pkcs11' })
          .onConflict((oc) => oc.column('key').doNothing())
          .execute();
      if ((await metaValue(db, CHAIN_KEYS_META)) === 'pkcs11') accounts = await hsmChainAccounts(db, hsm, labels, config.relayerCount);
    } catch (err) {
      hsm.close();
      throw err;
    }
  }
  const stop =
    opts.watch === false
      ? () => {}
      : keepMasterKeysFresh(db, box, wrapper, (err) => log.warn({ err: err.message }, 'cannot read the master keys again (rotation): keeping the ones loaded'));
  return {
    kind: config.keyCustody,
    box,
    wrapper,
    hsm,
    accounts,
    close() {
      stop();
      hsm?.close();
    },
  };
}
