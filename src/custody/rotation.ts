// `mintworks keys rotate-master`: a new master key for every sealed secret, while the service runs.
// Running processes read the stored master keys every MASTER_KEY_RELOAD_MS (master-keys.ts), so the
// rotation moves in steps, each waiting until every process has certainly seen the previous one:
//   1. store the new key (wrapped): processes load it, so they can open what it will seal;
//   2. make it current: processes seal new values with it;
//   3. re-seal every stored value still sealed with an old key;
//   4. drop the old keys once nothing stored needs them (the root key of local custody stays: it is
//      MASTER_KEY itself, and seals the master keys).
// No request fails on the way: at every moment each process can open every stored value.
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { ROOT_KEY_ID, type SecretBox } from '../util/secretbox.js';
import { CURRENT_MASTER_KEY, MASTER_KEY_PREFIX, MASTER_KEY_RELOAD_MS, newMasterKeyId, storeMasterKey, type KeyWrapper } from './master-keys.js';
import { resealAll, sealedKeyCounts } from './reseal.js';

/** Long enough for every running process to have read the master keys at least once more. */
export const PROPAGATION_MS = 3 * MASTER_KEY_RELOAD_MS + 500;

export interface RotationResult {
  key_id: string;
  previous_key_id: string;
  resealed: number;
  dropped: string[];
}

export async function setCurrentMasterKey(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const r = await tx.updateTable('meta').set({ value: id }).where('key', '=', CURRENT_MASTER_KEY).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) await tx.insertInto('meta').values({ key: CURRENT_MASTER_KEY, value: id }).execute();
  });
}

export async function rotateMasterKey(
  db: Db,
  box: SecretBox,
  wrapper: KeyWrapper,
  opts: { propagationMs?: number; progress?: (step: string) => void } = {},
): Promise<RotationResult> {
  const wait = () => new Promise((r) => setTimeout(r, opts.propagationMs ?? PROPAGATION_MS));
  const say = opts.progress ?? (() => {});
  const previous = box.currentKeyId;
  const id = newMasterKeyId();
  const key = randomBytes(32);
  await storeMasterKey(db, wrapper, id, key);
  box.addKey(id, key);
  say(`new master key ${id} stored; waiting for every process to load it`);
  await wait();
  await setCurrentMasterKey(db, id);
  box.useKey(id);
  say(`master key ${id} in use; waiting for every process to seal with it`);
  await wait();
  let resealed = await resealAll(db, box);
  // A process that sealed with the old key just before it switched: one more pass catches it.
  resealed += await resealAll(db, box);
  const counts = await sealedKeyCounts(db);
  const dropped: string[] = [];
  const stored = await db.selectFrom('meta').select('key').where('key', 'like', `${MASTER_KEY_PREFIX}%`).execute();
  for (const { key: row } of stored) {
    const old = row.slice(MASTER_KEY_PREFIX.length);
    if (old === id || (counts.get(old) ?? 0) > 0) continue;
    await db.deleteFrom('meta').where('key', '=', row).execute();
    if (old !== ROOT_KEY_ID && box.has(old)) box.dropKey(old);
    dropped.push(old);
  }
  say(`${resealed} secrets re-sealed; old keys dropped: ${dropped.join(', ') || 'none'}`);
  return { key_id: id, previous_key_id: previous, resealed, dropped };
}
