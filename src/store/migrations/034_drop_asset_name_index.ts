import type { Kysely } from 'kysely';

/**
 * The index of assets by (collection, name) goes: no query looks assets up by name (names are not
 * unique; `unique_name` has an index of its own), and lookups by collection alone use the
 * (collection, token id) key. It cost an entry for every create, and on PostgreSQL another for every
 * change of an indexed column (the mint's mark writes a new row version, with an entry in each index
 * its values match): a 500-asset mark wrote 8 % more WAL with it.
 */
export function dropAssetNameIndex() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('assets_collection_name_idx').ifExists().execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('assets_collection_name_idx').ifNotExists().on('assets').columns(['collection_uid', 'name']).execute();
    },
  };
}
