// Change counters for cached reads. A cached answer remembers the counters of the rows it was built from
// and is served only while they are unchanged. The counters live in shared memory, so a commit in any
// thread of the process (the API's, the workers') is seen by every other thread at once.
//
// The counters are bumped after the commit that changed the rows (SQLite: store/sqlite/changes.ts) or
// once its notification has arrived (PostgreSQL: store/postgres/changes.ts). A reader takes the counters
// *before* it reads the rows: a change committed after that read moves a counter the entry holds, and
// a change committed before it was read already. Rows share a slot when their keys hash alike, which
// costs a needless miss, never a stale answer.

/** Slots for rows, by hash of their key (a power of two). */
const ROW_SLOTS = 1 << 16;
/** Cells before the row slots: every collection's view-visible columns; everything at once. */
const COLLECTIONS = 0;
const EVERYTHING = 1;
const HEAD = 2;

export class RowVersions {
  private readonly cells: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer((HEAD + ROW_SLOTS) * 4)) {
    this.cells = new Int32Array(buffer);
  }

  /** The counter of an asset row. */
  asset(uid: string): number {
    return Atomics.load(this.cells, slotOf(uid));
  }
  /** The counter of the collections' name, contract address and chain: they change rarely, so one for all. */
  collections(): number {
    return Atomics.load(this.cells, COLLECTIONS);
  }
  /** Moved when changes may have been missed (a lost notification connection): every entry is old then. */
  everything(): number {
    return Atomics.load(this.cells, EVERYTHING);
  }

  /**
   * What an asset's view depends on, as one number: the sum of the asset's, the collections' and the
   * everything-counter. Counters only grow, so the sum moves whenever one of them does.
   */
  of(uid: string): number {
    return this.asset(uid) + this.collections() + this.everything();
  }

  /** A change of `key`: `a:<asset uid>` or `c` (any collection). */
  bump(key: string): void {
    if (key === 'c') Atomics.add(this.cells, COLLECTIONS, 1);
    else if (key.startsWith('a:')) Atomics.add(this.cells, slotOf(key, 2), 1);
  }
  bumpAssets(uids: Iterable<string>): void {
    for (const uid of uids) Atomics.add(this.cells, slotOf(uid), 1);
  }
  bumpEverything(): void {
    Atomics.add(this.cells, EVERYTHING, 1);
  }
}

/** FNV-1a of the key from `from` on, into a row slot. */
function slotOf(key: string, from = 0): number {
  let h = 0x811c9dc5;
  for (let i = from; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return HEAD + ((h >>> 0) & (ROW_SLOTS - 1));
}

/** How cached reads know that every change committed so far is counted (a store's `changeFeed`). */
export interface ChangeFeed {
  start(): Promise<void>;
  /** True (or a promise of it) once every change committed before the call is counted; false: read the database. */
  caughtUp(): true | Promise<boolean>;
  stop(): Promise<void>;
}

// The process's counters: made by the main thread, handed to the workers' thread (boot/threads/workers-thread.ts).
let processVersions = new RowVersions();

export function rowVersions(): RowVersions {
  return processVersions;
}

/** In a worker thread: use the counters of the thread that started it. */
export function adoptRowVersions(buffer: SharedArrayBuffer): void {
  processVersions = new RowVersions(buffer);
}
