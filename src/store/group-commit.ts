// Group commit for SQLite. With synchronous=FULL every commit waits for an fsync (~10 ms on a VM
// disk), which would cap request writes at ~100/s. Concurrent request transactions are therefore run
// together inside ONE database transaction, each in its own savepoint: a failing request rolls back
// only its savepoint and gets its own error; all the others share a single fsync. A request's promise
// settles only after the shared commit, so a 201 still means "on disk".
// PostgreSQL does not need this (many connections, its own group commit): writes go straight through.
import { sql } from 'kysely';
import type { Db, Dialect, Tx } from './db.js';

interface Pending<T = unknown> {
  fn: (tx: Tx) => Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

export class GroupCommitter {
  private queue: Pending[] = [];
  private flushing = false;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    private readonly maxBatch = 128,
  ) {}

  /** Runs `fn` in a transaction (shared with concurrent callers on SQLite); resolves after the commit. */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (this.dialect !== 'sqlite') return this.db.transaction().execute(fn);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve, reject } as Pending);
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        const settle: (() => void)[] = [];
        try {
          await this.db.transaction().execute(async (tx) => {
            for (const [i, p] of batch.entries()) {
              await sql.raw(`savepoint gc${i}`).execute(tx);
              try {
                const value = await p.fn(tx);
                await sql.raw(`release savepoint gc${i}`).execute(tx);
                settle.push(() => p.resolve(value));
              } catch (err) {
                await sql.raw(`rollback to savepoint gc${i}`).execute(tx);
                await sql.raw(`release savepoint gc${i}`).execute(tx);
                settle.push(() => p.reject(err));
              }
            }
          });
          for (const s of settle) s();
        } catch (err) {
          for (const p of batch) p.reject(err); // the shared commit failed: nobody's write happened
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
