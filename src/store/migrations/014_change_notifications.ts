import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * PostgreSQL announces the changes cached reads depend on (store/postgres/changes.ts): after a statement that
 * updates or deletes assets, the uids it touched, on the channel `mintworks_changes` as `a:<uid>,<uid>…`
 * (500 a notification, well under PostgreSQL's 8000-byte payload limit); after an update that sets a
 * collection's name, contract address or chain, `c`. Notifications leave at commit, in commit order, and
 * not at all when the transaction rolls back. Inserts announce nothing: nothing is cached of a row
 * before it exists, so creating assets costs no notification. On SQLite each connection captures its
 * changes with temporary triggers of its own (store/sqlite/changes.ts): nothing to migrate.
 */
export function changeNotifications(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`
        create function mintworks_assets_changed() returns trigger language plpgsql as $$
        declare batch text;
        begin
          for batch in select string_agg(uid, ',') from (select uid, (row_number() over ()) / 500 as part from changed) t group by part loop
            perform pg_notify('mintworks_changes', 'a:' || batch);
          end loop;
          return null;
        end $$`.execute(db);
      await sql`create trigger assets_updated_notify after update on assets referencing old table as changed for each statement execute function mintworks_assets_changed()`.execute(
        db,
      );
      await sql`create trigger assets_deleted_notify after delete on assets referencing old table as changed for each statement execute function mintworks_assets_changed()`.execute(
        db,
      );
      await sql`
        create function mintworks_collections_changed() returns trigger language plpgsql as $$
        begin
          perform pg_notify('mintworks_changes', 'c');
          return null;
        end $$`.execute(db);
      await sql`create trigger collections_updated_notify after update of name, contract_address, chain_id on collections for each statement execute function mintworks_collections_changed()`.execute(
        db,
      );
    },
  };
}
