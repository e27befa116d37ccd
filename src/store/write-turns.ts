// Turns at SQLite's write lock between the threads of one process: the API's (main) thread, the
// creates' thread and the workers' thread each have a connection, and SQLite lets one write at a time. A connection that finds
// the lock taken waits for it without blocking its event loop (BusyRetryConnection). Two things make
// that wait short and fair for requests:
// - A thread that releases the lock (commit, rollback, a write on its own) says so in shared memory, and
//   a waiting thread wakes at once instead of at its next timer.
// - The threads that answer requests (main, creates) go first: while one waits for the lock (a group of
//   creates whose clients wait for their 201), the workers do not begin another transaction, for at most `MAIN_FIRST_MAX_MS`. The
//   workers' thread ran transactions back to back (claim, mint, apply outcomes) and took the lock again
//   before the API's retry timer fired, so requests waited for several of them.
// Another process on the same file (the CLI) is not in shared memory: waits for it end by timer.

/** Longest a workers' transaction waits for the main thread to have had its turn. */
export const MAIN_FIRST_MAX_MS = 20;

import { isMainThread } from 'node:worker_threads';

// Node has Atomics.waitAsync; TypeScript's library for our target does not declare it yet.
type WaitAsync = (cells: Int32Array, index: number, value: number, timeoutMs: number) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

const RELEASES = 0;
const MAIN_WAITING = 1;

export class WriteTurns {
  private readonly cells: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(2 * 4)) {
    this.cells = new Int32Array(buffer);
  }

  /** The lock was released: wake whoever waits for it. */
  released(): void {
    Atomics.add(this.cells, RELEASES, 1);
    Atomics.notify(this.cells, RELEASES);
  }

  /** A mark to wait from: `untilReleased(mark, ms)` returns at the first release after it. */
  mark(): number {
    return Atomics.load(this.cells, RELEASES);
  }

  /** Resolves at the first release after `mark`, or after `ms`. */
  async untilReleased(mark: number, ms: number): Promise<void> {
    await this.waitChange(RELEASES, mark, ms);
  }

  /** The main thread waits for the lock (true) or has it / gave up (false). */
  mainWaiting(waiting: boolean): void {
    Atomics.add(this.cells, MAIN_WAITING, waiting ? 1 : -1);
    if (!waiting) Atomics.notify(this.cells, MAIN_WAITING);
  }

  /** In the workers' thread, before taking the lock: lets a waiting main thread go first (bounded). */
  async mainFirst(maxMs = MAIN_FIRST_MAX_MS): Promise<void> {
    const deadline = Date.now() + maxMs;
    for (;;) {
      const waiting = Atomics.load(this.cells, MAIN_WAITING);
      const left = deadline - Date.now();
      if (waiting <= 0 || left <= 0) return;
      await this.waitChange(MAIN_WAITING, waiting, left);
    }
  }

  /**
   * Until the cell is no longer `value`, or `ms` passed. A pending Atomics.waitAsync does not keep
   * Node's event loop alive: a timer beside it does, for as long as the wait may last.
   */
  private async waitChange(index: number, value: number, ms: number): Promise<void> {
    const w = waitAsync(this.cells, index, value, ms);
    if (!w.async) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([w.value, new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }
}

// The process's turns: made by the main thread, handed to the threads it starts (worker-thread.ts,
// creates-thread.ts).
let processTurns = new WriteTurns();
/** Whether this thread's writes answer requests (the main thread, the creates' thread): they go first. */
let answersRequests = isMainThread;

export function writeTurns(): WriteTurns {
  return processTurns;
}

/** Whether this thread goes first at the write lock (see above). */
export function goesFirst(): boolean {
  return answersRequests;
}

/**
 * In a thread started by the main thread: share its turns. `first`: this thread writes what requests
 * wait for (the creates' thread), and goes first like the main thread; the workers' thread does not.
 */
export function adoptWriteTurns(buffer: SharedArrayBuffer, first = false): void {
  processTurns = new WriteTurns(buffer);
  answersRequests = first;
}
