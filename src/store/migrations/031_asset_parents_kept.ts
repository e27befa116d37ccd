import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** An asset's references to the rows it belongs to, as its foreign keys named them on PostgreSQL. */
const ASSET_PARENTS = [
  { constraint: 'assets_app_uid_fkey', column: 'app_uid', parent: 'apps' },
  { constraint: 'assets_collection_uid_fkey', column: 'collection_uid', parent: 'collections' },
  { constraint: 'assets_mint_for_user_uid_fkey', column: 'mint_for_user_uid', parent: 'users' },
] as const;

/**
 * PostgreSQL: an asset's App, collection and user are no longer checked by foreign keys; instead their
 * rows can never be deleted nor their uids changed.
 *
 * Each foreign key was a trigger run for every asset inserted: a query on the parent and a row lock on
 * it. The three of them were 16 of the server's ~50 us to insert a create's asset and mint job (the
 * statement's execution time per row), about a sixth of the server's CPU per create. What they guarded
 * holds without them: a create checks its user and collection (and that both are its App's) in the
 * same transaction that inserts the asset, the App is the one its API key authenticated, and the
 * service never deletes an App, a user or a collection. The triggers here make that last part a rule
 * of the database, so a row an asset refers to cannot disappear between the check and the commit, nor
 * later by hand.
 *
 * SQLite keeps its foreign keys: there a check is a lookup in the parent's primary key in the same
 * process, and turning them off did not move the creates' rate.
 */
export function assetParentsKept(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`
        create function mintworks_kept_row() returns trigger language plpgsql as $$
        begin
          raise exception '% rows are kept for good (assets refer to them by uid): % refused', tg_table_name, tg_op
            using errcode = 'restrict_violation';
        end $$`.execute(db);
      for (const { constraint, parent } of ASSET_PARENTS) {
        await sql`create trigger ${sql.id(`${parent}_kept`)} before delete on ${sql.table(parent)} for each row execute function mintworks_kept_row()`.execute(
          db,
        );
        await sql`create trigger ${sql.id(`${parent}_uid_kept`)} before update of uid on ${sql.table(parent)}
          for each row when (old.uid is distinct from new.uid) execute function mintworks_kept_row()`.execute(db);
        await sql`alter table assets drop constraint if exists ${sql.id(constraint)}`.execute(db);
      }
    },
    async down(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      for (const { constraint, column, parent } of ASSET_PARENTS) {
        await sql`alter table assets add constraint ${sql.id(constraint)} foreign key (${sql.id(column)}) references ${sql.table(parent)} (uid)`.execute(db);
        await sql`drop trigger ${sql.id(`${parent}_kept`)} on ${sql.table(parent)}`.execute(db);
        await sql`drop trigger ${sql.id(`${parent}_uid_kept`)} on ${sql.table(parent)}`.execute(db);
      }
      await sql`drop function mintworks_kept_row()`.execute(db);
    },
  };
}
