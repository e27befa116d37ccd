import type { Kysely } from 'kysely';

/**
 * Collection options: the ERC-2981 royalty (`royalty_receiver`, `royalty_bps`, both null when none is
 * set), ERC-5192 soulbound tokens (fixed at deployment), the image of the collection's own metadata
 * document and that document's URI (`contract_uri`, ERC-7572: the service's /files/<sha256> for
 * development Apps, ipfs://<cid> for production ones). Existing collections have none of them.
 */
export function collectionOptions() {
  const columns = ['royalty_receiver', 'royalty_bps', 'soulbound', 'image_url', 'contract_uri'];
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('collections').addColumn('royalty_receiver', 'text').execute();
      await db.schema.alterTable('collections').addColumn('royalty_bps', 'integer').execute();
      await db.schema
        .alterTable('collections')
        .addColumn('soulbound', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('collections').addColumn('image_url', 'text').execute();
      await db.schema.alterTable('collections').addColumn('contract_uri', 'text').execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      for (const c of columns.reverse()) await db.schema.alterTable('collections').dropColumn(c).execute();
    },
  };
}
