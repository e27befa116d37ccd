// Outcomes committed together on SQLite. A block of the embedded chain holds a claim's five mint
// transactions, and the tracker finds their receipts in one pass: each outcome in a transaction of its
// own paid a commit and a flush of the WAL, one after another behind SQLite's write lock. The outcomes
// that are ready while one commits share the next commit instead, each in a savepoint of its own, so
// one that fails is rolled back alone and left for the next pass, as it was in a transaction of its
// own. PostgreSQL applies them side by side on the pool's connections, which a shared transaction
// would put one after another (measured slower: bench/README.md).
import { sql } from 'kysely';
import type { Db, Tx } from '../store/db.js';
import { writersTakeTurns } from '../store/inserts.js';
import { writeTurns } from '../store/write-turns.js';
import { Groups } from '../util/groups.js';

/** What an outcome does in the transaction that applies it; its result runs after the commit. */
export type ApplyInTx = (tx: Tx) => Promise<(() => void) | void | undefined>;

interface Waiting {
  /** The transaction's id: a group applies its outcomes in id order. */
  id: number;
  apply: ApplyInTx;
  resolve(after: (() => void) | void | undefined): void;
  reject(err: unknown): void;
}

/**
 * Most outcomes in one commit. SQLite's write lock is held while a group is applied (10-25 ms an
 * outcome of 400 mints): a group also ends early, after any outcome, when a request's write waits for
 * the lock (store/write-turns.ts), so a group of creates waits for one outcome at most, as before.
 */
export const MAX_OUTCOMES_PER_COMMIT = 4;

export class OutcomeCommits {
  private readonly groups = new Groups<Waiting>(MAX_OUTCOMES_PER_COMMIT, (group) => this.commitGroup(group));
  private readonly together: boolean;

  constructor(private readonly db: Db) {
    this.together = writersTakeTurns(db);
  }

  /**
   * Applies `apply` in a transaction: on SQLite alone when nothing else is ready, else with the
   * outcomes that came while the last group committed; on PostgreSQL in one of its own. Resolves once
   * committed, with what `apply` returned.
   */
  commit(id: number, apply: ApplyInTx): Promise<(() => void) | void | undefined> {
    if (!this.together) return this.db.transaction().execute(apply);
    // After this turn: the receipts of one pass that arrived together go as one group.
    return new Promise((resolve, reject) => this.groups.add({ id, apply, resolve, reject }));
  }

  private async commitGroup(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const [one] = group;
      return this.db.transaction().execute(one.apply).then(one.resolve, one.reject);
    }
    // In id order, the order they were recorded in.
    group.sort((a, b) => a.id - b.id);
    const results: { after?: (() => void) | void; err?: unknown; failed: boolean }[] = [];
    try {
      await this.db.transaction().execute(async (tx) => {
        for (const w of group) {
          results.push(await inSavepoint(tx, w.apply));
          if (results.length < group.length && writeTurns().mainIsWaiting()) break;
        }
      });
    } catch (err) {
      // The transaction itself failed (its BEGIN or COMMIT): nothing of the group is applied, and each
      // outcome waits for the tracker's next pass, as one in a transaction of its own would.
      for (const w of group) w.reject(err);
      return;
    }
    // Those left out when a request came wait at the head of the line, for the next group.
    this.groups.putBack(group.slice(results.length));
    results.forEach((r, i) => (r.failed ? group[i].reject(r.err) : group[i].resolve(r.after)));
  }
}

/**
 * `apply` in a savepoint: on an error what it did is undone and the transaction goes on. When the undo
 * itself fails (the database ended the transaction), the whole group fails with it.
 */
async function inSavepoint(tx: Tx, apply: ApplyInTx): Promise<{ after?: (() => void) | void; err?: unknown; failed: boolean }> {
  await sql`savepoint outcome`.execute(tx);
  try {
    const after = await apply(tx);
    await sql`release savepoint outcome`.execute(tx);
    return { after, failed: false };
  } catch (err) {
    await sql`rollback to savepoint outcome`.execute(tx);
    await sql`release savepoint outcome`.execute(tx);
    return { err, failed: true };
  }
}
