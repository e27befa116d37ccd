// New uids are 12 digits, as the hosted service's look: 9 × 10^11 of them, drawn in runs from random
// starting points (util/ids.ts). Once a table holds millions of rows a new one is taken now and then
// (at 1M rows, about one in a million creates), and the insert fails on the primary key. Nothing else
// was written (the transaction rolled back), so the create runs again with another uid, from a run
// started elsewhere, instead of answering 500.
import { isUniqueViolation } from '../store/db.js';
import { newUid, restartUidRun } from '../util/ids.js';

/** New uids tried after the first was taken; then the error is the caller's. */
export const MAX_UID_ROUNDS = 3;

/** The insert failed because the new row's uid is taken in `table`. */
export const isUidTaken = (err: unknown, table: string): boolean => isUniqueViolation(err, `${table}_pkey`) || isUniqueViolation(err, `${table}.uid`);

/** Runs `create` (one transaction inserting a row of `table` with the uid it is given) until its uid is free. */
export async function withNewUid<T>(table: string, create: (uid: string) => Promise<T>, uids: () => string = newUid): Promise<T> {
  for (let round = 0; ; round++) {
    try {
      return await create(uids());
    } catch (err) {
      if (round < MAX_UID_ROUNDS && isUidTaken(err, table)) {
        restartUidRun();
        continue;
      }
      throw err;
    }
  }
}
