// Named prepared statements on PostgreSQL, for the hottest reads (lookups by key, the first page of a
// user's assets). Kysely sends every query as an unnamed statement, so the server parses and plans it
// on every execution: for a single-row read that is most of the server's CPU. A named statement is
// parsed once per connection and, after a few executions, runs on a generic plan. Only texts
// registered here are named: a generic plan is chosen with the table statistics of the moment, and for
// a query whose best plan depends on the values or on table sizes (which grow from empty here) it can
// be far worse than a fresh one, so the rest stay unnamed. `pg` keeps track of which connection has
// prepared which name. Behind a transaction pooler (DATABASE_POOL_MODE=transaction) a client's next
// query may run on another server session, which has not prepared the name (or has, for another
// client): there every statement is unnamed.
import type pg from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import { fromDatabase } from '../unavailable.js';
import type { PoolSnapshot } from '../pool-snapshot.js';
import { HeldStatements } from './held-statements.js';

/** "cached plan must not change result type": the table changed under a prepared `select *`. */
const PLAN_CHANGED = '0A000';

const names = new Map<string, string>();
let counter = 0;
const nextName = () => `mw_${counter++}`;

/** Runs `text` as a named prepared statement from now on: only for lookups by a unique key. */
export function prepareByName(text: string): void {
  if (!names.has(text)) names.set(text, nextName());
}

/** How long this process's queries waited for a connection of its pool (for /health and /metrics). */
export class PoolStats {
  /** Connections handed out after a wait (every connection of the pool was busy). */
  waits = 0;
  waitMs = 0;
  /** Connections asked for and not released yet (the pool's own counts lag a tick behind). */
  held = 0;
  constructor(
    private readonly pool: pg.Pool,
    readonly max: number,
  ) {}
  snapshot(): PoolSnapshot {
    const p = this.pool;
    return { max: this.max, open: p.totalCount, idle: p.idleCount, waiting: p.waitingCount, waits: this.waits, wait_ms: Math.round(this.waitMs) };
  }
}

/**
 * The pool Kysely's PostgresDialect is given: its clients name the registered statements (`named`:
 * false behind a transaction pooler), and `stats` counts the waits for a connection. `explain`: what a
 * connection failure is turned into (a TLS refusal named with its host).
 */
export function preparingPool(
  pool: pg.Pool,
  opts: { named: boolean; stats?: PoolStats; explain?: (err: unknown) => unknown; shared?: boolean } = { named: true },
): PostgresPool {
  // Kysely keeps its connection object per client object: one wrapper per client, always the same.
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient) => {
    let w = wrapped.get(client);
    if (w) return w;
    const run = async (text: string, values: unknown[] = []) => {
      const name = opts.named ? names.get(text) : undefined;
      if (name === undefined) return client.query(text, values).catch((err) => Promise.reject(fromDatabase(err)));
      try {
        return await client.query({ name, text, values });
      } catch (err) {
        if ((err as { code?: string }).code !== PLAN_CHANGED) throw fromDatabase(err);
        // A migration by another process changed a table's columns: every name is prepared anew (in
        // a transaction the retry fails as the transaction is aborted; the caller's retry succeeds).
        for (const t of [...names.keys()]) names.set(t, nextName());
        return client.query(text, values).catch((e) => Promise.reject(fromDatabase(e)));
      }
    };
    const held = new HeldStatements(run, (text) => opts.named && names.has(text));
    w = {
      // A cursor (streamed query) goes through as it is, after what is held.
      query: ((q: string | object, parameters: readonly unknown[]) =>
        typeof q === 'string' ? held.query(q, [...parameters]) : held.flushThen(() => client.query(q as any))) as PostgresPoolClient['query'],
      release: () => {
        held.reset();
        if (opts.stats) opts.stats.held--;
        client.release();
      },
    };
    wrapped.set(client, w);
    return w;
  };
  return {
    connect: async () => {
      const stats = opts.stats;
      const busy = stats !== undefined && stats.held >= stats.max;
      const t0 = busy ? performance.now() : 0;
      if (stats) stats.held++;
      try {
        return wrap(await pool.connect());
      } catch (err) {
        if (stats) stats.held--;
        throw fromDatabase(opts.explain ? opts.explain(err) : err);
      } finally {
        if (busy) {
          stats.waits++;
          stats.waitMs += performance.now() - t0;
        }
      }
    },
    // A pool shared with another Kysely (the migrations') is ended by its owner.
    end: () => (opts.shared ? Promise.resolve() : pool.end()),
  };
}
