// Statements held on a connection and sent in the same round trip as the next one. Every statement
// sent through `pg` is a round trip: the client writes it and waits for the server's answer before it
// sends the next. A transaction of two statements was four: BEGIN, the two, COMMIT. Here BEGIN is held
// until the transaction's first statement and goes out with it, in one simple-protocol query, and a
// statement whose answer the caller does not need (an insert, marked with `heldStatement`) is held
// until the next one, the COMMIT included. A group of creates is two round trips instead of four.
//
// A statement sent with others must be one text without parameters: its values are written into it as
// literals (store/postgres/inline-parameters.ts), typed as the parameters would have been. A statement
// that is named (a prepared statement, store/postgres/prepared.ts: the first page of a user's assets)
// or whose values cannot be written so (bytes) is sent alone, after what was held; a held statement is
// inlined named or not. Order is kept: what is held runs before the statement it goes out with. What
// changes is when an error is seen: a held statement's error is the error of the statement it went
// out with (the COMMIT at the latest, and the transaction then rolls back).
import type pg from 'pg';
import { inlineParameters } from './inline-parameters.js';

type Result = pg.QueryResult;
/** Sends one text (`values`: its parameters; none, or empty, for a simple query of several statements). */
export type Send = (text: string, values?: unknown[]) => Promise<Result | Result[]>;

/** What the dialect's driver marks its transaction statements with (store/postgres/dialect.ts). */
const BEGIN = '/*mw:begin*/ ';
export const COMMIT_TEXT = '/*mw:commit*/ commit';
export const ROLLBACK_TEXT = '/*mw:rollback*/ rollback';
const HOLD = '/*mw:hold*/ ';

/** `text` (a BEGIN and what the transaction sets as it starts) held until the transaction's first statement. */
export const beginText = (text: string) => BEGIN + text;

/**
 * `text` held, in a transaction, until the transaction's next statement or its COMMIT: for a statement
 * whose result is not read (no rows, no count) and whose error may be seen at the next statement.
 * Outside a transaction it is sent at once.
 */
export const heldStatement = (text: string) => HOLD + text;

/** The answer of a statement that was held, or of a transaction statement that needed no round trip. */
const NOTHING = { command: '', rowCount: null, rows: [], fields: [], oid: 0 } as unknown as Result;

const lastOf = (r: Result | Result[]) => (Array.isArray(r) ? r[r.length - 1] : r);

/** One connection's held statements. */
export class HeldStatements {
  private held: string[] = [];
  /** In a transaction the driver began (its BEGIN held or sent). */
  private inTransaction = false;
  /** The transaction's BEGIN has gone out. */
  private begun = false;

  /** `isNamed`: whether a text runs as a named prepared statement (then sent alone, not with what is held). */
  constructor(
    private readonly send: Send,
    private readonly isNamed: (text: string) => boolean,
  ) {}

  /** Runs `text` with `values`, holding it or sending what is held with it. */
  query(text: string, values: unknown[]): Promise<Result> {
    if (text.startsWith(BEGIN)) return this.begin(text.slice(BEGIN.length));
    if (text === COMMIT_TEXT) return this.commit();
    if (text === ROLLBACK_TEXT) return this.rollback();
    if (text.startsWith(HOLD)) return this.hold(text.slice(HOLD.length), values);
    if (this.held.length === 0) return this.send(text, values).then(lastOf);
    const inline = this.isNamed(text) ? null : values.length ? inlineParameters(text, values) : text;
    return inline !== null ? this.sendHeldWith(inline).then(lastOf) : this.alone(text, values);
  }

  /** `text` with its parameters, after what is held if anything is. */
  private alone(text: string, values: unknown[]): Promise<Result> {
    const send = () => this.send(text, values).then(lastOf);
    return this.held.length ? this.afterHeld(send) : send();
  }

  /**
   * Before a query that cannot be sent with others and is not awaited here (a cursor, which `run`
   * returns as it is): what is held goes out first. Its error, if any, is the cursor's too (the
   * transaction is then aborted).
   */
  flushThen<T>(run: () => T): T {
    if (this.held.length) this.sendHeldWith().catch(() => {});
    return run();
  }

  /** The connection goes back to its pool: nothing of this transaction may reach its next user. */
  reset(): void {
    this.held = [];
    this.inTransaction = false;
    this.begun = false;
  }

  private begin(text: string): Promise<Result> {
    this.reset();
    this.inTransaction = true;
    this.held.push(text);
    return Promise.resolve(NOTHING);
  }

  private hold(text: string, values: unknown[]): Promise<Result> {
    // Named or not: a round trip saved costs more than the server's parse and plan of one statement.
    const inline = this.inTransaction ? inlineParameters(text, values) : null;
    if (inline === null) return this.alone(text, values);
    this.held.push(inline);
    return Promise.resolve(NOTHING);
  }

  /** ROLLBACK, what is held dropped; none at all when BEGIN never went out. */
  private rollback(): Promise<Result> {
    const begun = this.begun;
    this.reset();
    return begun ? this.send('rollback').then(lastOf) : Promise.resolve(NOTHING);
  }

  /**
   * COMMIT, with what is held; none at all when nothing but BEGIN was. When it fails the transaction
   * stays open here: a held statement's error leaves it open and aborted on the server, and the
   * driver's ROLLBACK that follows must go out.
   */
  private async commit(): Promise<Result> {
    if (!this.begun && this.held.length <= 1) {
      this.reset();
      return NOTHING;
    }
    const r = await this.sendHeldWith('commit');
    this.reset();
    return lastOf(r);
  }

  private sendHeldWith(text?: string): Promise<Result | Result[]> {
    // A line break before each `;`: a statement that ends in a `--` comment does not swallow it.
    const all = (text === undefined ? this.held : [...this.held, text]).join('\n;\n');
    this.held = [];
    this.begun ||= this.inTransaction;
    return this.send(all);
  }

  /** What is held, alone, then `run`'s query: both handed to `pg` at once (it sends them in that order). */
  private async afterHeld<T>(run: () => Promise<T>): Promise<T> {
    const flushed = this.sendHeldWith();
    const main = run();
    try {
      await flushed;
    } catch (err) {
      main.catch(() => {});
      throw err;
    }
    return main;
  }
}
