// Asset objects served from memory while the asset is unchanged: GET /asset/<uid> and the pages of
// GET /asset?user_uid. Apps poll their assets (is it minted yet?) and their players' inventories, and
// reading an asset from the database and writing its JSON cost more than the rest of the request
// together (a page of 1,000 assets: the page's uids come from the database, every asset unchanged since
// it was last written comes from here).
//
// Each entry is the asset object's JSON with the row counters (store/row-versions.ts) taken before the rows
// were read: the asset's, the collections' and the everything-counter, as one sum. It is served only
// while that is unchanged, after `caughtUp` has made sure every change committed before the request is
// counted (SQLite: at once, the counters move right after each commit of any thread of the process;
// PostgreSQL: a round trip on the notification connection, shared by concurrent requests). So a cached
// answer is never older than the database was when the request arrived.
//
// Whole pages are kept too, as the bytes of their answer: a page of the same assets, each unchanged, is
// served without joining its 700 KB again (that copy, and the garbage it left, were a fifth of a big
// holder's page). Which assets are on the page is read from the database each time.
import { rowVersions } from '../../store/row-versions.js';

interface Entry<B> {
  appUid: string;
  body: B;
  /** `RowVersions.of(uid)` before the rows were read. */
  version: number;
}

/** A page joined whole: its assets, in order, and the counter of each before they were read. */
interface PageEntry<B> {
  appUid: string;
  uids: readonly string[];
  versions: number[];
  body: B;
}

/** Whether `page` holds `uids` of `appUid`, in order, each at the counter it has now. */
function samePage(page: PageEntry<unknown>, appUid: string, uids: readonly string[]): boolean {
  if (page.appUid !== appUid || page.uids.length !== uids.length) return false;
  const v = rowVersions();
  for (let i = 0; i < uids.length; i++) if (page.uids[i] !== uids[i] || page.versions[i] !== v.of(uids[i])) return false;
  return true;
}

/** Pages kept whole at most (a page of 1,000 assets is about 700 KB). */
const MAX_PAGES = 16;

/**
 * `B`: how an object's JSON is kept (the service keeps the string: Node writes a string answer with its
 * headers in one write, where bytes go as a second chunk of a writev, ~8 us more per GET on a 2-core
 * machine); `P` how a page joined whole is kept (the service: its UTF-8 bytes, 700 KB not encoded again
 * on each answer).
 */
export interface AssetReadsOptions<B> {
  /** The asset object's JSON from the database; throws (and caches nothing) for an asset the App does not have. */
  read(appUid: string, uid: string): Promise<B>;
  /** The JSON of those of `uids` the App has, by uid, from the database. */
  readMany(appUid: string, uids: string[]): Promise<Map<string, B>>;
  /** Resolves true once every change committed before the call is counted; false reads the database. */
  caughtUp(): true | Promise<boolean>;
  /** Most entries kept (the oldest go first). */
  max: number;
  /**
   * Most bytes of entries kept (0: no bound but `max`): a few large objects hold what many small ones
   * would. Pages kept whole hold at most a quarter of it more.
   */
  maxBytes?: number;
}

/**
 * Values by key, oldest first out, within a count and a total length of their bodies (a page's bytes;
 * an object's characters, which V8 keeps in a byte each while the JSON is Latin-1, as it nearly always
 * is, and in two otherwise). A body longer than the whole bound is never kept: it would push out
 * everything else.
 */
class Bounded<V extends { body: { length: number } }> {
  private readonly values = new Map<string, V>();
  bytes = 0;

  constructor(
    private readonly maxCount: number,
    private readonly maxBytes: number,
  ) {}

  get size(): number {
    return this.values.size;
  }

  get(key: string): V | undefined {
    return this.values.get(key);
  }

  set(key: string, value: V): void {
    this.delete(key);
    if (value.body.length > this.maxBytes) return;
    while (this.values.size > 0 && (this.values.size >= this.maxCount || this.bytes + value.body.length > this.maxBytes))
      this.delete(this.values.keys().next().value!);
    this.values.set(key, value);
    this.bytes += value.body.length;
  }

  delete(key: string): void {
    const v = this.values.get(key);
    if (!v) return;
    this.values.delete(key);
    this.bytes -= v.body.length;
  }
}

export class AssetReads<B extends { length: number } = string, P extends { length: number } = B> {
  private readonly entries: Bounded<Entry<B>>;
  /** Pages kept whole: at most MAX_PAGES, within a quarter of `maxBytes`. */
  private readonly pages: Bounded<PageEntry<P>>;
  /** Answers so far, from memory and from the database (for /metrics); pages whole from memory or joined. */
  readonly counts = { hit: 0, miss: 0, pageHit: 0, pageMiss: 0, pageShared: 0 };
  /** Pages being read and joined, by key: requests for the same page meanwhile wait for that read. */
  private readonly pageReads = new Map<string, PageEntry<Promise<P>>>();
  /** The store's `caughtUp` has answered with a promise: answerNow leaves every read to `answer`. */
  private waits = false;

  constructor(private readonly opts: AssetReadsOptions<B>) {
    const maxBytes = opts.maxBytes || Number.POSITIVE_INFINITY;
    this.entries = new Bounded(opts.max, maxBytes);
    this.pages = new Bounded(MAX_PAGES, maxBytes / 4);
  }

  /**
   * The asset object's JSON when memory has it and it can be trusted without waiting (SQLite: always
   * caught up); undefined otherwise, and `answer` reads it. The hot path of GET /asset/<uid>: a cached
   * answer costs no promise and no turn of the microtasks.
   */
  answerNow(appUid: string, uid: string): B | undefined {
    const e = this.entries.get(uid);
    if (e === undefined || e.appUid !== appUid || this.waits) return undefined;
    const current = this.current();
    if (current !== true) {
      // A store that is caught up only once asked and answered (PostgreSQL's fence): `answer` waits for
      // it, and this is not asked again, for a promise nobody would wait on.
      this.waits = current !== false;
      return undefined;
    }
    if (e.version !== rowVersions().of(uid)) return undefined;
    this.counts.hit++;
    return e.body;
  }

  /** The asset object's JSON. */
  async answer(appUid: string, uid: string): Promise<B> {
    const v = rowVersions();
    const e = this.entries.get(uid);
    if (e !== undefined && e.appUid === appUid) {
      const current = this.current();
      // No await while the store is caught up already (SQLite: always): a turn of the microtasks saved.
      if ((current === true || (await current)) && e.version === v.of(uid)) {
        this.counts.hit++;
        return e.body;
      }
    }
    this.counts.miss++;
    // Taken before the read: a change committed after it moves it.
    const version = v.of(uid);
    const body = await this.opts.read(appUid, uid);
    this.entries.set(uid, { appUid, body, version });
    return body;
  }

  /**
   * The JSON of each of `uids` (the App's, in that order), from memory where the entry is current and
   * from the database in one read for the rest. An asset the App does not have (gone since the uids
   * were read) is left out.
   */
  async many(appUid: string, uids: readonly string[]): Promise<B[]> {
    return this.manyOf(appUid, uids, await this.current());
  }

  /**
   * The objects of `uids` (the App's, in that order) joined by `join` into one answer, kept under `key`
   * (what the page is: its user, size and cursor) and served again whole while it holds the same assets,
   * each unchanged. A page missing one of them (gone since the uids were read) is not kept.
   */
  async page(appUid: string, key: string, uids: readonly string[], join: (bodies: B[]) => P): Promise<P> {
    const current = await this.current();
    const kept = this.pages.get(key);
    if (current && kept !== undefined && samePage(kept, appUid, uids)) {
      this.counts.pageHit++;
      return kept.body;
    }
    // The same page being read for another request, begun with these assets at these counters: nothing on
    // it has changed since, so its answer is this one's too. After a start or a change to a big holder's
    // page, the requests asking meanwhile (16 at a time in the bench) would each read and join its 1,000
    // objects: on PostgreSQL the first seconds' p99 was over a second.
    const reading = this.pageReads.get(key);
    if (current && reading !== undefined && samePage(reading, appUid, uids)) {
      this.counts.pageShared++;
      return reading.body;
    }
    this.counts.pageMiss++;
    // Taken before the objects are read: a change committed after it moves them.
    const v = rowVersions();
    const versions = uids.map((uid) => v.of(uid));
    const body = this.manyOf(appUid, uids, current).then((bodies) => {
      const joined = join(bodies);
      if (current && bodies.length === uids.length) this.pages.set(key, { appUid, uids, versions, body: joined });
      return joined;
    });
    if (current) {
      const read = { appUid, uids, versions, body };
      this.pageReads.set(key, read);
      const done = () => {
        if (this.pageReads.get(key) === read) this.pageReads.delete(key);
      };
      body.then(done, done);
    }
    return body;
  }

  private async manyOf(appUid: string, uids: readonly string[], current: boolean): Promise<B[]> {
    const v = rowVersions();
    const out: (B | undefined)[] = new Array(uids.length);
    const missing: string[] = [];
    const versions: number[] = [];
    for (let i = 0; i < uids.length; i++) {
      const uid = uids[i];
      const e = this.entries.get(uid);
      // Taken before the read of the missing ones: a change committed after it moves it.
      const version = v.of(uid);
      if (current && e !== undefined && e.appUid === appUid && e.version === version) out[i] = e.body;
      else {
        missing.push(uid);
        versions.push(version);
      }
    }
    this.counts.hit += uids.length - missing.length;
    this.counts.miss += missing.length;
    if (missing.length > 0) {
      const read = await this.opts.readMany(appUid, missing);
      for (let m = 0; m < missing.length; m++) {
        const body = read.get(missing[m]);
        if (body !== undefined) this.entries.set(missing[m], { appUid, body, version: versions[m] });
      }
      for (let i = 0; i < uids.length; i++) out[i] ??= read.get(uids[i]);
    }
    return out.filter((x): x is B => x !== undefined);
  }

  /** Whether every change committed before now is counted (else entries cannot be trusted). */
  private current(): boolean | Promise<boolean> {
    return this.opts.caughtUp();
  }

  /** Entries and their bytes, and pages kept whole and theirs (for /metrics). */
  size(): { entries: number; bytes: number; pages: number; pageBytes: number } {
    return { entries: this.entries.size, bytes: this.entries.bytes, pages: this.pages.size, pageBytes: this.pages.bytes };
  }
}
