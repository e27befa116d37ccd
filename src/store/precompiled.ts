// Queries compiled once: the hottest reads skip Kysely's query building.
import { CompiledQuery, type Compilable } from 'kysely';
import { prepareByName } from './postgres/prepared.js';
import type { Db, DbOrTx } from './db.js';

/**
 * A query built once and reused with new values: building and compiling a Kysely query costs more than
 * running a simple indexed SELECT on SQLite, so the hottest reads skip it. `build` receives placeholder
 * values (one per parameter, in order) and must use each exactly where the real value goes. On
 * PostgreSQL it runs as a named prepared statement (store/postgres/prepared.ts), so its plan, made once
 * for any values, must be right for all of them: a lookup by a unique key, or a statement whose indexes
 * the planner is told enough about to choose the same ones whatever the data (services/assets/reads.ts).
 */
export function precompiled<R, N extends number>(count: N, build: (db: Db, ...placeholders: string[]) => Compilable<R>) {
  // One compilation per dialect (its adapter): a process holds one database, but a test may hold both.
  const byDialect = new Map<unknown, { sql: string; slots: number[]; fixed: readonly unknown[] }>();
  return async (db: DbOrTx, ...values: unknown[]): Promise<R[]> => {
    const dialect = db.getExecutor().adapter.constructor;
    let c = byDialect.get(dialect);
    if (!c) {
      const marks = Array.from({ length: count }, (_, i) => `\u0000param${i}\u0000`);
      const q = build(db as Db, ...marks).compile();
      const slots = q.parameters.map((p) => marks.indexOf(p as string));
      if (marks.some((_, i) => !slots.includes(i))) throw new Error('precompiled: a placeholder is not used by the query');
      c = { sql: q.sql, slots, fixed: q.parameters };
      byDialect.set(dialect, c);
      prepareByName(q.sql);
    }
    const { slots } = c;
    const params = c.fixed.map((p, i) => (slots[i] >= 0 ? values[slots[i]] : p));
    return (await db.executeQuery<R>(CompiledQuery.raw(c.sql, params))).rows;
  };
}
