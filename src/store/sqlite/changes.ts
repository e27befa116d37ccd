// Which rows a SQLite connection's commits change, for cached reads (store/row-versions.ts). Temporary
// triggers (this connection's own: no migration, and other programs that open the file are not
// affected) call back into the process with the key of each changed row; once the transaction is over,
// the keys are bumped in the process's shared counters, before whoever committed goes on. Every
// connection of the process that writes (the API thread's, the workers') captures its changes so.
import type SQLite from 'better-sqlite3';
import { rowVersions } from '../row-versions.js';

// What a cached asset view is built from: the asset row, and its collection's name, contract and chain.
const TRIGGERS = `
  create temp trigger if not exists mintworks_asset_updated after update on main.assets
    begin select mintworks_changed('a:' || old.uid); end;
  create temp trigger if not exists mintworks_asset_deleted after delete on main.assets
    begin select mintworks_changed('a:' || old.uid); end;
  create temp trigger if not exists mintworks_collection_updated after update of name, contract_address, chain_id on main.collections
    begin select mintworks_changed('c'); end;
`;

export class SqliteChanges {
  private pending: string[] = [];

  constructor(private readonly database: SQLite.Database) {
    database.function('mintworks_changed', { deterministic: false }, (key: unknown) => {
      this.pending.push(String(key));
      return null;
    });
  }

  /** Creates the triggers: after the migrations, as they name the tables. */
  install(): void {
    this.database.exec(TRIGGERS);
  }

  /**
   * Called after every statement: once no transaction is open (committed, rolled back or a statement on
   * its own), the changed keys are bumped. A rolled back change is bumped all the same: a needless miss.
   */
  settle(): void {
    if (this.pending.length === 0 || this.database.inTransaction) return;
    const keys = this.pending;
    this.pending = [];
    const versions = rowVersions();
    for (const k of keys) versions.bump(k);
  }
}
