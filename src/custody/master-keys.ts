// The master keys that seal the wallet seed and the App and webhook secrets (src/util/secretbox.ts), as
// the database keeps them: never in the clear, each wrapped by the installation's root of trust.
//   meta 'master_key:<id>'    '<wrapper>:<base64>'  (hsm: AES-256-GCM by the token's wrapping key;
//                                                   root: sealed with MASTER_KEY, local custody)
//   meta 'master_key_current' the id new values are sealed with (absent: MASTER_KEY itself, `v1` values)
// Every process loads them at start and reads the rows again every few seconds, which is how a running
// service learns of a rotation (src/custody/rotation.ts) without a restart.
import { randomBytes } from 'node:crypto';
import type { Db, DbOrTx } from '../store/db.js';
import { ROOT_KEY_ID, type SecretBox } from '../util/secretbox.js';
import type { Hsm } from './hsm.js';

export const MASTER_KEY_PREFIX = 'master_key:';
export const CURRENT_MASTER_KEY = 'master_key_current';
/** How often a process looks for new master keys: rotation waits a few of these between its steps. */
export const MASTER_KEY_RELOAD_MS = 2000;

/** What wraps master keys for storage: the HSM (pkcs11) or MASTER_KEY (local). */
export interface KeyWrapper {
  readonly kind: 'hsm' | 'root';
  wrap(key: Buffer): string;
  unwrap(wrapped: string): Buffer;
}

/** `label`: the token's AES key that wraps the master keys (made the first time). */
export function hsmWrapper(hsm: Hsm, label: string): KeyWrapper {
  const key = hsm.aesKey(label);
  return {
    kind: 'hsm',
    wrap: (k) => `hsm:${hsm.encrypt(key, k).toString('base64')}`,
    unwrap: (w) => {
      if (!w.startsWith('hsm:')) throw new Error('this master key is not wrapped by the HSM (KEY_CUSTODY changed without `mintworks keys migrate`?)');
      return hsm.decrypt(key, Buffer.from(w.slice(4), 'base64'));
    },
  };
}

/** Local custody: MASTER_KEY seals the master keys made by a rotation. */
export function rootWrapper(root: SecretBox): KeyWrapper {
  return {
    kind: 'root',
    wrap: (k) => `root:${root.seal(k.toString('hex'))}`,
    unwrap: (w) => {
      if (!w.startsWith('root:')) throw new Error('this master key is wrapped by an HSM: set KEY_CUSTODY=pkcs11 and the PKCS11_* settings');
      return Buffer.from(root.open(w.slice(5)), 'hex');
    },
  };
}

export const newMasterKeyId = () => randomBytes(6).toString('hex');

/** Stores a new master key, wrapped (not yet the one in use). */
export async function storeMasterKey(db: DbOrTx, wrapper: KeyWrapper, id: string, key: Buffer): Promise<void> {
  await db
    .insertInto('meta')
    .values({ key: MASTER_KEY_PREFIX + id, value: wrapper.wrap(key) })
    .execute();
}

/** Loads into `box` every stored master key it lacks and switches to the current one. */
export async function loadMasterKeys(db: Db, box: SecretBox, wrapper: KeyWrapper): Promise<void> {
  const rows = await db.selectFrom('meta').select(['key', 'value']).where('key', 'like', 'master_key%').execute();
  const stored = new Set<string>();
  let current: string | null = null;
  for (const r of rows) {
    if (r.key === CURRENT_MASTER_KEY) current = r.value;
    else if (r.key.startsWith(MASTER_KEY_PREFIX)) {
      const id = r.key.slice(MASTER_KEY_PREFIX.length);
      stored.add(id);
      if (!box.has(id)) box.addKey(id, wrapper.unwrap(r.value));
    }
  }
  if (current !== null && current !== box.currentKeyId) box.useKey(current);
  // A key a rotation dropped is forgotten here too (it opens nothing stored any more).
  for (const id of box.keyIds()) if (id !== ROOT_KEY_ID && id !== box.currentKeyId && !stored.has(id)) box.dropKey(id);
}

/**
 * With the HSM, secrets are never sealed with a key from the environment: the first start makes a master
 * key, wraps it in the token and makes it current (two processes starting together agree on one).
 */
export async function ensureHsmMasterKey(db: Db, box: SecretBox, wrapper: KeyWrapper): Promise<void> {
  const current = await db.selectFrom('meta').select('value').where('key', '=', CURRENT_MASTER_KEY).executeTakeFirst();
  if (!current) {
    const id = newMasterKeyId();
    await db.transaction().execute(async (tx) => {
      await storeMasterKey(tx, wrapper, id, randomBytes(32));
      await tx
        .insertInto('meta')
        .values({ key: CURRENT_MASTER_KEY, value: id })
        .onConflict((oc) => oc.column('key').doNothing())
        .execute();
    });
  }
  await loadMasterKeys(db, box, wrapper);
}

/** Reads the master keys again every MASTER_KEY_RELOAD_MS; returns the function that stops it. */
export function keepMasterKeysFresh(db: Db, box: SecretBox, wrapper: KeyWrapper, onError: (err: Error) => void): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    loadMasterKeys(db, box, wrapper)
      .catch(onError)
      .finally(() => (busy = false));
  }, MASTER_KEY_RELOAD_MS);
  timer.unref();
  return () => clearInterval(timer);
}
