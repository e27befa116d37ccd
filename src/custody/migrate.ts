// `mintworks keys migrate --to pkcs11`: an installation with local custody (MASTER_KEY or
// DATA_DIR/master.key) hands its master key over to the HSM. A new master key is made, wrapped by the
// token's AES key, every secret is re-sealed with it and the old master keys are deleted; then
// DATA_DIR/master.key is removed, in one database transaction. Run with the service stopped, with the installation's local settings
// plus the PKCS11_* ones; afterwards start it with KEY_CUSTODY=pkcs11.
//
// The chain accounts stay the seed-derived ones the installation's contracts know (their owner and
// operators): the seed is now sealed under the HSM-wrapped key like every other secret.
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { SecretBox } from '../util/secretbox.js';
import { CHAIN_KEYS_META } from '../chain/keys.js';
import type { Hsm } from './hsm.js';
import { CURRENT_MASTER_KEY, MASTER_KEY_PREFIX, hsmWrapper, newMasterKeyId, storeMasterKey } from './master-keys.js';
import { runningAnvilPid } from '../chain/anvil.js';
import { resealAll, sealedKeyCounts } from './reseal.js';
import { masterKeyFile } from './custody.js';
import { hsmLabels } from './hsm-accounts.js';

export interface MigrationResult {
  key_id: string;
  resealed: number;
  master_key_file_removed: boolean;
  /** What the operator still has to do. */
  next: string[];
}

export async function migrateToPkcs11(config: Config, db: Db, box: SecretBox, hsm: Hsm): Promise<MigrationResult> {
  const pid = runningAnvilPid(config.dataDir);
  if (pid) throw new Error(`the service is running on DATA_DIR ${config.dataDir} (its embedded chain is pid ${pid}): stop it first`);
  const wrapper = hsmWrapper(hsm, (await hsmLabels(db)).wrappingKey);
  const id = newMasterKeyId();
  const key = randomBytes(32);
  box.addKey(id, key);
  box.useKey(id);
  // All or nothing: an installation is either still local (the old master key opens everything) or
  // migrated (only the HSM-wrapped key is left), never half of each.
  const resealed = await db.transaction().execute(async (tx) => {
    await storeMasterKey(tx, wrapper, id, key);
    const n = await resealAll(tx, box);
    const left = [...(await sealedKeyCounts(tx)).entries()].filter(([k, c]) => k !== id && c > 0);
    if (left.length) throw new Error(`values still sealed with the old master key (${left.map(([k, c]) => `${k}: ${c}`).join(', ')}): nothing was changed`);
    await tx.deleteFrom('meta').where('key', 'like', `${MASTER_KEY_PREFIX}%`).where('key', '!=', `${MASTER_KEY_PREFIX}${id}`).execute();
    await tx.deleteFrom('meta').where('key', '=', CURRENT_MASTER_KEY).execute();
    await tx.insertInto('meta').values({ key: CURRENT_MASTER_KEY, value: id }).execute();
    await tx
      .insertInto('meta')
      .values({ key: CHAIN_KEYS_META, value: 'hd' })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return n;
  });
  const file = masterKeyFile(config);
  const removed = fs.existsSync(file);
  if (removed) fs.rmSync(file);
  const next = ['Start the service with KEY_CUSTODY=pkcs11 and the same PKCS11_* settings.'];
  if (config.masterKeyHex) next.push('Remove MASTER_KEY from the environment (and wherever it is kept): it no longer opens anything.');
  next.push('Backups made before the migration still open with the old master key: destroy them or keep them as safe as that key.');
  return { key_id: id, resealed, master_key_file_removed: removed, next };
}
