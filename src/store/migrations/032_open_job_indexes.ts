import { sql, type Kysely } from 'kysely';

/**
 * The jobs' indexes hold only the jobs they are read for: the claim index the jobs not done (claims
 * take queued and running ones, /health counts every status but done), the group index the queued
 * ones (a group is woken by making its queued jobs due). A finished job then leaves both.
 *
 * A job's status is in every one of these indexes, so each change of it wrote a new entry in each
 * (PostgreSQL writes a new row version with an entry in every index whose predicate it matches;
 * SQLite rewrites each index that holds the column). With a mint job per asset, that was four entries
 * at the create, four at the claim and three at the completion; now three, two and one (the primary
 * key's alone, as the job is done). The index of unfinished jobs by kind and status is the claim
 * index's head, so it goes.
 *
 * A query that is to use one of them names its predicate as a literal (`status <> 'done'`,
 * `status = 'queued'`): SQLite uses a partial index only for a query that has its WHERE term.
 */
export function openJobIndexes() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('jobs_unfinished_idx').execute();
      await db.schema.dropIndex('jobs_claim_idx').execute();
      await db.schema.createIndex('jobs_claim_idx').on('jobs').columns(['kind', 'status', 'run_at']).where(sql.ref('status'), '<>', sql.lit('done')).execute();
      await db.schema.dropIndex('jobs_group_idx').execute();
      await db.schema.createIndex('jobs_group_idx').on('jobs').column('group_key').where(sql.ref('status'), '=', sql.lit('queued')).execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('jobs_group_idx').execute();
      await db.schema.createIndex('jobs_group_idx').on('jobs').columns(['group_key', 'status']).execute();
      await db.schema.dropIndex('jobs_claim_idx').execute();
      await db.schema.createIndex('jobs_claim_idx').on('jobs').columns(['kind', 'status', 'run_at']).execute();
      await db.schema.createIndex('jobs_unfinished_idx').on('jobs').columns(['kind', 'status']).where(sql.ref('status'), '<>', sql.lit('done')).execute();
    },
  };
}
