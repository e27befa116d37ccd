import { randomInt, randomUUID } from 'node:crypto';

const FIRST_UID = 100_000_000_000;
const LAST_UID = 999_999_999_999;
/** Largest step between consecutive uids of a run (the mean is half of it). */
export const UID_MAX_STEP = 2000;
/** A run starts this far below the last uid at most, so it can go on a long while before it wraps. */
const RUN_ROOM = 1_000_000_000;

let last = 0; // 0: no run yet (or restarted): the next uid starts one at random

/**
 * A 12-digit numeric uid as the hosted service issues them ("816379099131"); never starts with 0.
 *
 * Drawn in runs: a run starts at a random uid, and each next uid is the previous one plus a random step
 * (1 to UID_MAX_STEP). Rows created together then sit side by side in every index on uid, so a
 * group of inserts writes one or two index pages instead of one random page per row: on SQLite that
 * is a page fewer in the WAL per created asset, and on PostgreSQL fewer pages dirtied and written
 * whole after each checkpoint. A taken uid is no likelier than with independent draws (a run covers a
 * random stretch of the 9 × 10^11, and steps over the uids it passes); when one is taken all the same,
 * `restartUidRun` moves the run elsewhere (services/uids.ts).
 */
export function newUid(): string {
  let next = last + randomInt(1, UID_MAX_STEP + 1);
  if (last === 0 || next > LAST_UID) next = randomInt(FIRST_UID, LAST_UID - RUN_ROOM);
  last = next;
  return String(next);
}

/** The next uid starts a new run at a random place (after a taken uid: the run may be crossing another's). */
export function restartUidRun(): void {
  last = 0;
}

export const isUid = (s: string): boolean => /^[1-9][0-9]{11}$/.test(s);

/**
 * An event id: a version 7 UUID (RFC 9562), the time in ms in its first 48 bits and randomness after.
 * Events made together sort together, so the unique index on the ids (and the deliveries' key) grows
 * at its end: a minted batch of 400 events wrote a random index page per event with random ids, a
 * fifth more WAL per batch on SQLite. The random part is a version 4 UUID's (Node keeps a pool of them):
 * its 74 random bits after the version nibble, with the same variant bits.
 */
export function newEventId(): string {
  const time = Date.now().toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
}
