// Every value sealed with a master key, wherever it is stored, and re-sealing them under the key in use.
// A value is replaced only if it is still the one that was read (compare and set), so a secret changed
// meanwhile (an App secret rotated during the pass) is never overwritten with its old content.
import type { Db, DbOrTx } from '../store/db.js';
import { SecretBox } from '../util/secretbox.js';

interface SealedColumn {
  table: 'meta' | 'api_keys' | 'webhook_endpoints';
  column: 'value' | 'secret_sealed' | 'previous_secret_sealed';
  /** Rows of meta hold other things too: only these keys are sealed. */
  metaKeys?: string[];
}

export const SEALED_COLUMNS: SealedColumn[] = [
  { table: 'meta', column: 'value', metaKeys: ['seed'] },
  { table: 'api_keys', column: 'secret_sealed' },
  { table: 'webhook_endpoints', column: 'secret_sealed' },
  { table: 'webhook_endpoints', column: 'previous_secret_sealed' },
];

async function sealedValues(db: DbOrTx, c: SealedColumn): Promise<string[]> {
  let q = (db as Db).selectFrom(c.table as 'api_keys').select(`${c.column} as v` as 'secret_sealed');
  if (c.metaKeys) q = q.where('key' as 'api_key', 'in', c.metaKeys);
  const rows = (await q.execute()) as unknown as { v: string | null }[];
  return rows.map((r) => r.v).filter((v): v is string => typeof v === 'string' && v.length > 0);
}

/** How many stored values each master key id seals. */
export async function sealedKeyCounts(db: DbOrTx): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const c of SEALED_COLUMNS) for (const v of await sealedValues(db, c)) counts.set(SecretBox.keyIdOf(v), (counts.get(SecretBox.keyIdOf(v)) ?? 0) + 1);
  return counts;
}

/** Re-seals every value not sealed with `box`'s current key. Returns how many were re-sealed. */
export async function resealAll(db: DbOrTx, box: SecretBox): Promise<number> {
  let n = 0;
  for (const c of SEALED_COLUMNS) {
    for (const old of await sealedValues(db, c)) {
      if (SecretBox.keyIdOf(old) === box.currentKeyId) continue;
      const fresh = box.seal(box.open(old));
      const r = await (db as Db)
        .updateTable(c.table as 'api_keys')
        .set({ [c.column]: fresh } as { secret_sealed: string })
        .where(c.column as 'secret_sealed', '=', old)
        .executeTakeFirst();
      n += Number(r.numUpdatedRows);
    }
  }
  return n;
}
