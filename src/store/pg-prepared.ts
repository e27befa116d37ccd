// Named prepared statements on PostgreSQL. Kysely sends every query as an unnamed statement, so the
// server parses and plans the same few hundred SQL texts on every execution: about half of its CPU
// per simple query here. A statement named after its text is parsed once per connection; `pg` keeps
// track of which connection has prepared which name.
import type pg from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';

/** Texts with more parameters than this (multi-row inserts, long IN lists) stay unnamed: they come in
 * as many versions as there are list lengths, and their parse cost is shared by many rows anyway. */
const MAX_PARAMS = 64;
/** At most this many distinct statements are named; the server keeps each one per connection. */
const MAX_NAMED = 1000;
/** "cached plan must not change result type": the table changed under a prepared `select *`. */
const PLAN_CHANGED = '0A000';

/** The pool Kysely's PostgresDialect is given: its clients name the statements they run. */
export function preparingPool(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  let generation = 0;
  const nameOf = (text: string, values: readonly unknown[]): string | null => {
    if (values.length === 0 || values.length > MAX_PARAMS) return null; // simple protocol, or a batch
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_NAMED) return null;
      name = `mw${generation}_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  // Kysely keeps its connection object per client object: one wrapper per client, always the same.
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient) => {
    let w = wrapped.get(client);
    if (w) return w;
    const query = async (text: string, parameters: readonly unknown[]) => {
      const values = [...parameters];
      const name = nameOf(text, values);
      if (name === null) return client.query(text, values);
      try {
        return await client.query({ name, text, values });
      } catch (err) {
        if ((err as { code?: string }).code !== PLAN_CHANGED) throw err;
        // A migration by another process changed a table's columns: every name is prepared anew.
        names.clear();
        generation++;
        return client.query(text, values);
      }
    };
    w = {
      // A cursor (streamed query) goes through as it is.
      query: ((q: string | object, parameters: readonly unknown[]) => (typeof q === 'string' ? query(q, parameters) : client.query(q as any))) as PostgresPoolClient['query'],
      release: () => client.release(),
    };
    wrapped.set(client, w);
    return w;
  };
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}
