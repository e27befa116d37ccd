// Multi-row inserts whose SQL text is built once per table and shape, on both databases; and writes
// whose result is not read, held on PostgreSQL to go out with the next statement (`executeHeld`).
import { CompiledQuery, type Insertable, PostgresAdapter, sql } from 'kysely';
import type { Database } from './schema.js';
import { prepareByName } from './postgres/prepared.js';
import { heldStatement } from './postgres/held-statements.js';
import type { DbOrTx } from './db.js';
import { setBounded } from '../util/bounded-map.js';

/**
 * Insert texts kept per database: SQLite's by table, columns and row count (one of `chunkSizes`),
 * PostgreSQL's by tables and columns.
 */
const INSERT_TEXTS_KEPT = 128;
/** By the database's dialect (its adapter, shared by its transactions): each has its own SQL text. */
const insertTexts = new WeakMap<object, Map<string, string>>();

/**
 * Inserts `rows` with one statement (on SQLite, a few: see `chunkSizes`). Every row names the same
 * columns in the same order (a value left undefined is stored as NULL). Built through Kysely, a
 * multi-row insert turns each value of each row into a node and the nodes into text, every time: for
 * the creates (their assets and mint jobs) that was about a sixth of the API thread's CPU per request.
 * Here the text is made once and only the values change:
 * - SQLite: `values (?, …), (?, …)`, compiled once per table, columns and number of rows (checked to
 *   take its parameters row by row, column by column); the rows go in chunks of a few fixed sizes
 *   (`chunkSizes`), so that the texts are few and stay prepared.
 * - PostgreSQL: `select * from unnest($1::type[], …)`, one array per column, so one text per table and
 *   columns whatever the number of rows. It runs as a named prepared statement: the server no longer
 *   parses and plans a statement of hundreds of parameters for each group (about a seventh of its CPU
 *   per create), and a text per group size would have kept a plan per size on every connection.
 */
export async function insertRows<T extends keyof Database & string>(
  db: DbOrTx,
  table: T,
  rows: readonly Insertable<Database[T]>[],
  opts: { held?: boolean } = {},
): Promise<void> {
  if (rows.length === 0) return;
  if (onPostgres(db)) return insertParts(db, [{ table, rows }], opts.held === true);
  const columns = Object.keys(rows[0]);
  for (const row of rows as readonly Record<string, unknown>[]) checkSameColumns(table, columns, row);
  const sizes = chunkSizes(rows.length);
  // Several statements are all or nothing only in a transaction: the callers' own, or one of its own.
  if (sizes.length > 1 && !db.isTransaction) return db.transaction().execute((tx) => insertChunks(tx, table, columns, rows, sizes));
  return insertChunks(db, table, columns, rows, sizes);
}

/** SQLite: `rows` (checked to name `columns`) inserted by one statement per chunk of `sizes`. */
async function insertChunks(db: DbOrTx, table: keyof Database & string, columns: string[], rows: readonly object[], sizes: number[]): Promise<void> {
  let at = 0;
  for (const size of sizes) {
    const params: unknown[] = [];
    for (let r = at; r < at + size; r++) {
      const row = rows[r] as Record<string, unknown>;
      for (let c = 0; c < columns.length; c++) params.push(row[columns[c]] ?? null);
    }
    await db.executeQuery(CompiledQuery.raw(valuesText(db, table, columns, size), params));
    at += size;
  }
}

/**
 * SQLite: the row counts a multi-row insert is cut into, largest first (64, then at most three each of
 * 16, 4 and 1). A text per row count would be prepared per group size: through a burst of creates every
 * size from 1 to a few hundred came by, each prepared statement held up to a MB of native memory, and
 * the statements the cache let go stayed until a garbage collection freed them (about 50 MB more peak
 * memory, parsed and planned again each time). With four counts, each table's few texts stay prepared.
 */
export function chunkSizes(count: number): number[] {
  const sizes: number[] = [];
  let left = count;
  for (const size of INSERT_CHUNKS) {
    while (left >= size) {
      sizes.push(size);
      left -= size;
    }
  }
  return sizes;
}
const INSERT_CHUNKS = [64, 16, 4, 1] as const;

/** SQLite's `insert … values (?, …), …` of `count` rows of `columns` into `table`, built once. */
function valuesText(db: DbOrTx, table: keyof Database & string, columns: string[], count: number): string {
  const adapter = db.getExecutor().adapter;
  const key = `${table}\n${columns.join(',')}\n${count}`;
  let texts = insertTexts.get(adapter);
  if (!texts) insertTexts.set(adapter, (texts = new Map()));
  let text = texts.get(key);
  if (text === undefined) {
    text = valuesInsertText(db, table, columns, count);
    setBounded(texts, key, text, INSERT_TEXTS_KEPT);
  }
  return text;
}

function checkSameColumns(table: string, columns: string[], row: Record<string, unknown>): void {
  if (Object.keys(row).length !== columns.length || columns.some((c) => !(c in row)))
    throw new Error(`insertRows: every row into ${table} must name the same columns`);
}

/**
 * Runs a write whose result is not read. On PostgreSQL, in a transaction, it goes out with the
 * transaction's next statement (the COMMIT at the latest), and its error is that statement's
 * (store/postgres/held-statements.ts): a round trip fewer.
 */
export async function executeHeld(db: DbOrTx, query: { compile(): CompiledQuery }): Promise<void> {
  const q = query.compile();
  await db.executeQuery(onPostgres(db) ? CompiledQuery.raw(heldStatement(q.sql), [...q.parameters]) : q);
}

/**
 * Whether each query is a round trip to a database server (PostgreSQL), so that reads worth a
 * statement of their own together are worth sending as one (SQLite runs in this process: a query
 * costs microseconds, and a plain one per table plans best).
 */
export function queriesAreRoundTrips(db: DbOrTx): boolean {
  return onPostgres(db);
}

/**
 * Whether the database takes one writing transaction at a time (SQLite's write lock): transactions that
 * would wait for each other lose nothing by sharing a commit. PostgreSQL runs them side by side.
 */
export function writersTakeTurns(db: DbOrTx): boolean {
  return !onPostgres(db);
}

/** Kysely's adapter (marked internal, stable) says which database `db` is: one per database, not per transaction. */
function onPostgres(db: DbOrTx): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Rows for one table, as `insertRows` takes them. */
export interface InsertPart<T extends keyof Database & string = keyof Database & string> {
  table: T;
  rows: readonly Insertable<Database[T]>[];
}

/**
 * Inserts into several tables, as `insertRows` would one after the other (all or nothing in the
 * caller's transaction). On PostgreSQL in one statement (each part but the last a data-modifying
 * `with`), so one round trip instead of one per table: a create group's assets and mint jobs.
 * `held`: in a transaction on PostgreSQL the statement goes out with the next one, the COMMIT at the
 * latest, and its error is that statement's (store/postgres/held-statements.ts).
 */
export async function insertRowsTogether(db: DbOrTx, parts: readonly InsertPart[], opts: { held?: boolean } = {}): Promise<void> {
  const filled = parts.filter((p) => p.rows.length > 0);
  if (onPostgres(db)) {
    if (filled.length) await insertParts(db, filled, opts.held === true);
    return;
  }
  for (const p of filled) await insertRows(db, p.table, p.rows);
}

/** PostgreSQL: the parts (each with rows) as one named statement of `unnest` inserts, one array per column. */
async function insertParts(db: DbOrTx, parts: readonly InsertPart[], held = false): Promise<void> {
  const adapter = db.getExecutor().adapter;
  const shapes = parts.map((p) => ({ table: p.table, columns: Object.keys(p.rows[0]) }));
  const key = shapes.map((x) => `${x.table}\n${x.columns.join(',')}`).join('\n\n');
  let texts = insertTexts.get(adapter);
  if (!texts) insertTexts.set(adapter, (texts = new Map()));
  let text = texts.get(key);
  if (text === undefined) {
    const inserts: string[] = [];
    let first = 1;
    for (const x of shapes) {
      inserts.push(await unnestInsertText(db, x.table, x.columns, first));
      first += x.columns.length;
    }
    const last = inserts.pop()!;
    text = inserts.length ? `with ${inserts.map((t, i) => `part${i} as (${t})`).join(', ')} ${last}` : last;
    prepareByName(text);
    setBounded(texts, key, text, INSERT_TEXTS_KEPT);
  }
  const params: unknown[][] = [];
  for (const [i, part] of parts.entries()) {
    const columns = shapes[i].columns;
    const arrays = columns.map(() => [] as unknown[]);
    for (const row of part.rows as readonly Record<string, unknown>[]) {
      checkSameColumns(part.table, columns, row);
      for (let c = 0; c < columns.length; c++) arrays[c].push(row[columns[c]] ?? null);
    }
    params.push(...arrays);
  }
  await db.executeQuery(CompiledQuery.raw(held ? heldStatement(text) : text, params));
}

function valuesInsertText(db: DbOrTx, table: keyof Database & string, columns: string[], count: number): string {
  let n = 0;
  const marks = Array.from({ length: count }, () => Object.fromEntries(columns.map((c) => [c, `\u0000${n++}\u0000`])));
  const q = db
    .insertInto(table)
    .values(marks as never)
    .compile();
  if (q.parameters.length !== n || q.parameters.some((p, i) => p !== `\u0000${i}\u0000`))
    throw new Error(`insertRows: the insert into ${table} does not take its values row by row`);
  return q.sql;
}

/** `insert … select * from unnest(…)` of `columns`, its array parameters numbered from `first`. */
async function unnestInsertText(db: DbOrTx, table: string, columns: string[], first: number): Promise<string> {
  // Each column's type, as the array parameter's (`unnest` cannot infer it from an untyped parameter).
  const { rows } = await sql<{
    name: string;
    type: string;
  }>`select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute where attrelid = ${table}::regclass and attnum > 0 and not attisdropped`.execute(
    db,
  );
  const typeOf = new Map(rows.map((r) => [r.name, r.type]));
  const arrays = columns.map((c, i) => {
    const type = typeOf.get(c);
    if (!type) throw new Error(`insertRows: ${table} has no column ${c}`);
    return `$${first + i}::${type}[]`;
  });
  return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) select * from unnest(${arrays.join(', ')})`;
}
