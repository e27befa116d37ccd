// Prepared statements of a SQLite connection, kept by their SQL text.
import type SQLite from 'better-sqlite3';
import { setBounded } from '../../util/bounded-map.js';

/**
 * Kysely's SQLite driver prepares every statement anew (parsing and planning it each time). The service
 * issues the same few hundred SQL texts over and over, so prepared statements are kept by their text.
 * Texts with a variable number of `?` (IN lists, multi-row inserts) come in as many versions as there
 * are list lengths, and a prepared statement's memory grows with its text (a 400-row insert holds
 * about a MB): long texts get a small cache of their own, so they cannot fill memory, while the short
 * ones that make up most of the traffic stay prepared.
 */
/** Told of every distinct SQL text a SQLite store prepares (the query-plan test lists them so). */
export const sqlObservers = new Set<(sql: string, database: SQLite.Database) => void>();

/** SQL texts longer than this are "long" (tens of placeholders or more). */
const LONG_SQL = 2048;

export function withStatementCache(database: SQLite.Database, max = 1000, maxLong = 16): CachedStatements {
  const short = new Map<string, SQLite.Statement>();
  const long = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(text: string) {
      const cache = text.length > LONG_SQL ? long : short;
      let stmt = cache.get(text);
      if (stmt) {
        if (cache === long) {
          cache.delete(text); // most recently used last
          cache.set(text, stmt);
        }
        return stmt;
      }
      for (const o of sqlObservers) o(text, database);
      stmt = withPlainRows(database.prepare(text));
      return setBounded(cache, text, stmt, cache === long ? maxLong : max); // the oldest out first
    },
  };
}

/**
 * A statement that returns rows builds them from arrays (`raw` mode) with an object literal compiled
 * for its columns: better-sqlite3 builds each row object key by key, which costs about as much as the
 * indexed lookup itself for a row of thirty columns. The rows are the same plain objects (a later
 * column of the same name wins, as before). Only what Kysely's driver calls is overridden.
 */
function withPlainRows(stmt: SQLite.Statement): SQLite.Statement {
  if (!stmt.reader) return stmt;
  // The keys are the statement's own column names, quoted by JSON.stringify.
  const compile = () => {
    const names = stmt.columns().map((c) => c.name);
    return {
      width: names.length,
      row: new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (r: unknown[]) => unknown,
    };
  };
  let shape = compile();
  stmt.raw(true);
  const rows = (arrays: unknown[][]) => {
    // SQLite prepares a statement again after a schema change: a `*` may have gained or lost columns.
    if (arrays.length > 0 && arrays[0].length !== shape.width) shape = compile();
    const out = new Array(arrays.length);
    for (let i = 0; i < arrays.length; i++) out[i] = shape.row(arrays[i]);
    return out;
  };
  const all = stmt.all.bind(stmt) as (...p: unknown[]) => unknown[][];
  const iterate = stmt.iterate.bind(stmt) as (...p: unknown[]) => IterableIterator<unknown[]>;
  return Object.assign(stmt, {
    all: (...params: unknown[]) => rows(all(...params)),
    *iterate(...params: unknown[]) {
      for (const r of iterate(...params)) yield rows([r])[0];
    },
  }) as SQLite.Statement;
}

/** The statement cache the driver prepares through; its statements also say whether a SQL text writes (`readonly`). */
export interface CachedStatements {
  prepare(text: string): SQLite.Statement;
  close(): void;
}
