import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * PostgreSQL wakes the workers of every process when work is inserted: after a statement that inserts
 * jobs, each distinct kind it inserted, and after one that inserts webhook deliveries, `webhook.deliver`,
 * on the channel `mintworks_wake` (store/pg-changes.ts listens). They leave at commit, so a woken worker
 * finds the rows; a worker process thus starts a job a process beside it enqueued within milliseconds
 * instead of at its next poll (which stays, for a notification lost with a connection). SQLite has one
 * process: its wake-ups are in memory.
 */
export function wakeups(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`
        create function mintworks_jobs_inserted() returns trigger language plpgsql as $$
        declare k text;
        begin
          for k in select distinct kind from inserted loop
            perform pg_notify('mintworks_wake', k);
          end loop;
          return null;
        end $$`.execute(db);
      await sql`create trigger jobs_inserted_wake after insert on jobs referencing new table as inserted for each statement execute function mintworks_jobs_inserted()`.execute(
        db,
      );
      await sql`
        create function mintworks_deliveries_inserted() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from inserted) then
            perform pg_notify('mintworks_wake', 'webhook.deliver');
          end if;
          return null;
        end $$`.execute(db);
      await sql`create trigger deliveries_inserted_wake after insert on webhook_deliveries referencing new table as inserted for each statement execute function mintworks_deliveries_inserted()`.execute(
        db,
      );
    },
    async down(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`drop trigger if exists jobs_inserted_wake on jobs`.execute(db);
      await sql`drop trigger if exists deliveries_inserted_wake on webhook_deliveries`.execute(db);
      await sql`drop function if exists mintworks_jobs_inserted()`.execute(db);
      await sql`drop function if exists mintworks_deliveries_inserted()`.execute(db);
    },
  };
}
