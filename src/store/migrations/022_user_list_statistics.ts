import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * PostgreSQL plans a user's asset list once per connection (a named statement, services/assets/reads.ts)
 * instead of at every request, where planning cost several times the run. A plan made once is made for
 * "a user", not for the user asked about, and the planner's idea of a user's share of the assets is
 * 1 / (distinct owners it sampled): in an installation of few users, one of them holding most assets (a
 * vault or treasury user), that is close to all of them, and the plan walks the App's assets newest
 * first filtering by owner, past every asset of the large user to find a small user's five. Told what
 * an asset service's users look like, each holding a small share (distinct owners about a tenth of the
 * assets; the heavy holders stay exact, in the statistics' most common values), it reads the user's own
 * index whatever the data, and keeps the one plan. Analyzed at once: the setting counts from the next
 * ANALYZE. SQLite plans each statement once per connection already, with the user's index.
 */
export function userListStatistics(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`alter table assets alter column owner_user_uid set (n_distinct = -0.1), alter column mint_for_user_uid set (n_distinct = -0.1)`.execute(db);
      await sql`analyze assets`.execute(db);
    },
    async down(db: Kysely<any>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`alter table assets alter column owner_user_uid reset (n_distinct), alter column mint_for_user_uid reset (n_distinct)`.execute(db);
    },
  };
}
