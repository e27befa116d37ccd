// Kysely's PostgreSQL dialect, with what must hold for each transaction said as it begins, in the same
// round trip as its BEGIN (one simple query: `begin; set local …`). Behind a transaction pooler a
// session SET would land on whichever server session ran it and leak into another client's; SET LOCAL
// lasts as long as the transaction, which is exactly what the pooler gives this client.
//
// The migrations' dialect also takes their lock there. Kysely's migrator takes a session advisory lock
// (pg_advisory_lock) on a connection before its transaction and releases it after: behind a transaction
// pooler the lock, the migrations and the release each run on any server session, so the lock would
// be held by a session nobody owns and every later start would wait for it. A transaction-level lock
// (pg_advisory_xact_lock) taken as the migrations' transaction begins is released by its commit or
// rollback, wherever it ran: processes starting together wait for it, then find nothing left to do.
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type PostgresDialectConfig,
  type TransactionSettings,
} from 'kysely';
import { beginText, COMMIT_TEXT, ROLLBACK_TEXT } from './held-statements.js';

/** The migrations' advisory lock (Kysely's own id, so that a Kysely of an older version waits for it too). */
const MIGRATION_LOCK = '3853314791062309107';

class BeginDriver extends PostgresDriver {
  constructor(
    config: PostgresDialectConfig,
    private readonly atBegin: string,
  ) {
    super(config);
  }

  // BEGIN, and what is set as the transaction begins, go out with its first statement; COMMIT with what
  // is held then (store/postgres/held-statements.ts).
  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    let begin = 'begin';
    if (settings.isolationLevel) begin += ` isolation level ${settings.isolationLevel}`;
    if (settings.accessMode) begin += ` ${settings.accessMode}`;
    await connection.executeQuery(CompiledQuery.raw(beginText(this.atBegin ? `${begin}; ${this.atBegin}` : begin)));
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(COMMIT_TEXT));
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(ROLLBACK_TEXT));
  }
}

/** PostgreSQL with `atBegin` (statements separated by `;`, no parameters) run as each transaction begins. */
export class BeginDialect extends PostgresDialect {
  constructor(
    private readonly dialectConfig: PostgresDialectConfig,
    private readonly atBegin: string,
  ) {
    super(dialectConfig);
  }

  override createDriver(): PostgresDriver {
    return new BeginDriver(this.dialectConfig, this.atBegin);
  }
}

/** The transaction settings of every transaction: its timeouts, as SET LOCAL (0: the server's own). */
export function transactionSettings(statementTimeoutMs: number, idleInTransactionTimeoutMs: number): string {
  return [
    statementTimeoutMs > 0 ? `set local statement_timeout = ${Math.trunc(statementTimeoutMs)}` : '',
    idleInTransactionTimeoutMs > 0 ? `set local idle_in_transaction_session_timeout = ${Math.trunc(idleInTransactionTimeoutMs)}` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/** The same timeouts for a session (a direct connection or a session pooler), set once per connection. */
export function sessionSettings(statementTimeoutMs: number, idleInTransactionTimeoutMs: number): string {
  return transactionSettings(statementTimeoutMs, idleInTransactionTimeoutMs).replaceAll('set local', 'set');
}

/** Kysely's session lock replaced by the transaction's own (taken by MigrationDialect as it begins). */
class MigrationAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

/** For the migrator only: its transaction takes the migrations' lock, and has no statement timeout (an index build may take long). */
export class MigrationDialect extends BeginDialect {
  constructor(config: PostgresDialectConfig) {
    super(config, `set local statement_timeout = 0; select pg_advisory_xact_lock(${MIGRATION_LOCK})`);
  }

  override createAdapter(): PostgresAdapter {
    return new MigrationAdapter();
  }
}
