import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Asset metadata storage: the per-token URI to mint with (ipfs://<document cid> for production Apps, a
 * file-store URL for development Apps that stored their image; null = the collection's baseURI + id),
 * and store_image_on_ipfs as given at creation, which edits need to store new documents the same way.
 */
export function metadata(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('assets').addColumn('pending_token_uri', 'text').execute();
      await db.schema
        .alterTable('assets')
        .addColumn('store_image', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
