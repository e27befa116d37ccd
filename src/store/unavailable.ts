// Which failures mean "the database cannot be reached or used right now" rather than "this request is
// wrong" or "the code is wrong": a PostgreSQL connection lost (a restart, a failover, a pooler recycling
// connections, a terminated backend), a server refusing connections while it starts or shuts down, and
// SQLite's write lock held past its wait or its file failing to read or write. The API answers them 503
// `database_unavailable` with Retry-After (the transaction was rolled back, or its outcome is unknown and
// the same Idempotency-Key answers a retry); workers take them as a pause, not as a job's failure.

/** SQLSTATE classes and codes of a server that is going or gone. */
const PG_UNAVAILABLE_CLASSES = ['08']; // connection_exception
const PG_UNAVAILABLE_CODES = new Set([
  '57P01', // admin_shutdown (pg_terminate_backend, a fast or smart stop)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
  '57014', // query_canceled: DATABASE_STATEMENT_TIMEOUT_MS ran out (an overloaded server), or an operator's pg_cancel_backend
  '53300', // too_many_connections
]);

/**
 * Errors of Node's sockets when the server is not there, and of the file system under SQLite's WAL
 * (its flush before an answer failing: the commit may not be on disk, so nobody may be told it is).
 */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
  'EIO',
  'ENOSPC',
  'EDQUOT',
  'EROFS',
]);

/** What `pg` says (without a code) of a connection that broke under it or could not be made. */
const PG_CLIENT_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end on the pool)/;

const MARK = Symbol('databaseUnavailable');

/**
 * True for a failure of the database itself. Socket errors count only when the store marked them as
 * its own (`fromDatabase`): the same ECONNREFUSED from a chain node or a webhook endpoint is not one.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as { [MARK]?: boolean })[MARK] === true) return true;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (code.length === 5 && (PG_UNAVAILABLE_CODES.has(code) || PG_UNAVAILABLE_CLASSES.some((c) => code.startsWith(c)))) return true;
  // SQLite: the write lock still held after the wait, a locked table, the file failing to read or write.
  if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL)/.test(code)) return true;
  return typeof e.message === 'string' && PG_CLIENT_MESSAGES.test(e.message);
}

/** Marks `err`, thrown by a database client, when it says the database cannot be reached; returns it. */
export function fromDatabase<E>(err: E): E {
  if (typeof err !== 'object' || err === null) return err;
  const e = err as { code?: unknown; errors?: unknown };
  const socket = typeof e.code === 'string' && SOCKET_CODES.has(e.code);
  // `connect ECONNREFUSED` on several addresses comes as an AggregateError.
  const all = Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => isDatabaseUnavailable(fromDatabase(x)));
  if (socket || all || isDatabaseUnavailable(err)) Object.defineProperty(err, MARK, { value: true, enumerable: false });
  return err;
}

/** The seconds a client is told to wait before retrying (Retry-After). */
export const DATABASE_RETRY_AFTER_S = 1;
