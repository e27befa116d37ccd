import type { Kysely } from 'kysely';

/**
 * Items' metadata stored as assets' is: `items.store_image` keeps store_image_on_ipfs as given (edits
 * store their new documents the same way), `items.token_uri` the item's `ipfs://<cid>` once a production
 * App's document is on IPFS (null: the metadata route, baseURI + id, as every item before).
 */
export function itemMetadata() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('items')
        .addColumn('store_image', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('items').addColumn('token_uri', 'text').execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('items').dropColumn('token_uri').execute();
      await db.schema.alterTable('items').dropColumn('store_image').execute();
    },
  };
}
