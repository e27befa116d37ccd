// GET /asset/<uid> answered from memory while the asset is unchanged. Apps poll their assets (is it
// minted yet?), and a read from the database costs more than the rest of the request together.
//
// Each entry is the answer's JSON with the row counters (store/row-versions.ts) taken before the rows
// were read: the asset's, the collections' and the everything-counter, as one sum. It is served only
// while that is unchanged, after `caughtUp` has made sure every change committed before the request is
// counted (SQLite: at once, the counters move right after each commit of any thread of the process;
// PostgreSQL: a round trip on the notification connection, shared by concurrent requests). So a cached
// answer is never older than the database was when the request arrived.
import { rowVersions } from '../../store/row-versions.js';

interface Entry {
  appUid: string;
  body: string;
  /** `RowVersions.of(uid)` before the rows were read. */
  version: number;
}

export interface AssetReadsOptions {
  /** The answer's JSON from the database; throws (and caches nothing) for an asset the App does not have. */
  read(appUid: string, uid: string): Promise<string>;
  /** Resolves true once every change committed before the call is counted; false reads the database. */
  caughtUp(): true | Promise<boolean>;
  /** Most entries kept (the oldest go first). */
  max: number;
  /** Most bytes of answers kept (0: no bound but `max`): a few large answers hold what many small ones would. */
  maxBytes?: number;
}

export class AssetReads {
  private readonly entries = new Map<string, Entry>();
  /** The answers' length in characters (their bytes: the answers are JSON, mostly ASCII). */
  private bytes = 0;
  /** Answers so far, from memory and from the database (for /metrics). */
  readonly counts = { hit: 0, miss: 0 };

  constructor(private readonly opts: AssetReadsOptions) {}

  async answer(appUid: string, uid: string): Promise<string> {
    const v = rowVersions();
    const e = this.entries.get(uid);
    if (e !== undefined && e.appUid === appUid) {
      const ready = this.opts.caughtUp();
      if ((ready === true || (await ready)) && e.version === v.of(uid)) {
        this.counts.hit++;
        return e.body;
      }
    }
    this.counts.miss++;
    // Taken before the read: a change committed after it moves it.
    const version = v.of(uid);
    const body = await this.opts.read(appUid, uid);
    this.drop(uid);
    const maxBytes = this.opts.maxBytes || Number.POSITIVE_INFINITY;
    if (body.length > maxBytes) return body; // never kept: it would push out everything else
    while (this.entries.size > 0 && (this.entries.size >= this.opts.max || this.bytes + body.length > maxBytes)) this.drop(this.entries.keys().next().value!);
    this.entries.set(uid, { appUid, body, version });
    this.bytes += body.length;
    return body;
  }

  /** Entries and their bytes (for /metrics). */
  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private drop(uid: string): void {
    const e = this.entries.get(uid);
    if (!e) return;
    this.entries.delete(uid);
    this.bytes -= e.body.length;
  }
}
