// The changes cached reads depend on, as PostgreSQL announces them (migration 014's triggers): a
// connection of its own LISTENs and bumps the process's row counters (store/row-versions.ts) for every
// notification, whichever process or thread committed the change.
//
// A notification arrives a little after its commit. Before a cached answer is served, `caughtUp()`
// makes sure every change committed before the request arrived has been counted: it sends a
// notification of its own on this connection and waits for it to come back. PostgreSQL delivers
// notifications in commit order, so once it is back every earlier commit's notifications have been
// handled. One such round trip serves every request that asked while the previous one was out, so
// under load it costs a fraction of a query per request, and a write answered by any process (an edit
// through another API process, a mint recorded by a worker process) is seen by the next read here.
//
// A fence goes out at the end of the event loop's turn (setImmediate), not at the first request that
// asks: every request of the turn then shares it. Sent at the first, it served that one request and
// the turn's others waited for it to come back and for the next fence after it; at 64 connections
// the API thread then sat idle a quarter of the time, and cached reads answered 0.63-0.73 of a bare
// route's rate (0.73-0.79 at the end of the turn; 0.82-0.88 with the fence a simple-protocol NOTIFY
// instead of a `select pg_notify($1, $2)` to parse and bind; 0.98 with no fence at all). One fence out
// at a time: a fence per turn whatever was out cost more than it saved (0.43), each a query of its own
// to write and read.
//
// LISTEN needs a session of its own: behind a transaction pooler the store gives this a direct
// connection (DATABASE_DIRECT_URL), or no feed at all (store/postgres/open.ts).
//
// While the connection is down nothing is known to be current: `caughtUp()` answers false and reads go
// to the database. Notifications may have been missed meanwhile, so a new connection moves every
// counter (`bumpEverything`) before cached answers are served again.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { rowVersions, type ChangeFeed } from '../row-versions.js';

export const CHANGES_CHANNEL = 'mintworks_changes';
/** Wake-ups (migration 019): a job kind inserted, or `webhook.deliver`. */
export const WAKE_CHANNEL = 'mintworks_wake';
/** A fence that does not come back within this is taken for a lost connection. */
const FENCE_TIMEOUT_MS = 2_000;
const MAX_RETRY_MS = 5_000;

type Settle = (current: boolean) => void;

export class PgChanges implements ChangeFeed {
  private client: pg.Client | null = null;
  private live = false;
  private stopped = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | null = null;
  // Fences: the one out (its token and the callers it answers), and the callers waiting for the next.
  private readonly fenceChannel = `mintworks_fence_${randomBytes(6).toString('hex')}`;
  private seq = 0;
  private out: { token: string; settles: Settle[]; timer: NodeJS.Timeout } | null = null;
  private next: Settle[] = [];
  /** A fence for `next` is to go out at the end of this turn. */
  private sendScheduled = false;

  /**
   * `onWake`: also LISTENs to the wake-ups of migration 019 (a job kind inserted by any process) and
   * passes each on. `changes: false`: a process that caches nothing (a worker process) only wakes.
   */
  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly log: Logger,
    private readonly opts: { onWake?: (kind: string) => void; changes?: boolean } = {},
  ) {}

  /** Connects (and keeps reconnecting in the background): reads are served from the database meanwhile. */
  async start(): Promise<void> {
    await this.connect().catch((err) => this.lost(err as Error));
  }

  /** Resolves true once every change committed before the call is counted; false when that cannot be known. */
  caughtUp(): Promise<boolean> {
    if (!this.live) return Promise.resolve(false);
    return new Promise((settle) => {
      this.next.push(settle);
      this.scheduleFence();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.dropped();
    await client?.end().catch(() => {});
  }

  /** At the end of this turn, a fence for the callers waiting then (unless one is out: its return sends the next). */
  private scheduleFence(): void {
    if (this.sendScheduled || this.out) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      if (this.live && !this.out && this.next.length) this.sendFence();
    });
  }

  private sendFence(): void {
    const token = String(++this.seq);
    const timer = setTimeout(() => this.lost(new Error(`no answer to a change fence within ${FENCE_TIMEOUT_MS} ms`)), FENCE_TIMEOUT_MS);
    this.out = { token, settles: this.next, timer };
    this.next = [];
    // The simple protocol, one message each way and no statement to parse and bind: the channel is
    // this feed's own name (letters, digits, underscores) and the token a number.
    this.client!.query(`notify "${this.fenceChannel}", '${token}'`).catch((err) => this.lost(err as Error));
  }

  private onNotification(msg: pg.Notification): void {
    if (msg.channel === WAKE_CHANNEL) {
      if (msg.payload) this.opts.onWake?.(msg.payload);
      return;
    }
    if (msg.channel === CHANGES_CHANNEL) {
      const payload = msg.payload ?? '';
      if (payload === 'c') rowVersions().bump('c');
      else if (payload.startsWith('a:')) rowVersions().bumpAssets(payload.slice(2).split(','));
      return;
    }
    const out = this.out;
    if (msg.channel === this.fenceChannel && out !== null && out.token === msg.payload) {
      const { settles, timer } = out;
      clearTimeout(timer);
      this.out = null;
      for (const s of settles) s(true);
      if (this.next.length) this.scheduleFence();
    }
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.connection);
    this.client = client;
    client.on('notification', (m) => this.onNotification(m));
    client.on('error', (err) => this.lost(err));
    client.on('end', () => this.lost(new Error('connection ended')));
    await client.connect();
    if (this.opts.changes !== false) await client.query(`listen ${CHANGES_CHANNEL}`);
    if (this.opts.onWake) await client.query(`listen ${WAKE_CHANNEL}`);
    await client.query(`listen "${this.fenceChannel}"`);
    if (this.client !== client || this.stopped) return;
    // What was cached before may have missed notifications while there was no connection.
    if (this.opts.changes !== false) rowVersions().bumpEverything();
    // Wake-ups may have been missed too: every kind looks once more (the poll would, later).
    this.opts.onWake?.('*');
    this.live = true;
    this.retryMs = 100;
  }

  /** Nothing is current any more: waiting callers read the database; a new connection follows. */
  private lost(err: Error): void {
    if (!this.client) return; // already handled
    const client = this.client;
    if (this.live) this.log.warn({ err: err.message }, 'change notifications lost: cached reads are off until they are back');
    this.dropped();
    client.removeAllListeners();
    client.on('error', () => {}); // a late error of the abandoned connection
    client.end().catch(() => {});
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().catch((e) => this.lost(e as Error));
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }

  private dropped(): void {
    this.live = false;
    this.client = null;
    const waiting = [...(this.out?.settles ?? []), ...this.next];
    if (this.out) clearTimeout(this.out.timer);
    this.out = null;
    this.next = [];
    for (const s of waiting) s(false);
  }
}
