// Cached asset reads: when an entry may be served (src/services/assets/cache.ts), how SQLite connections
// capture their changes (src/store/sqlite/changes.ts) and how PostgreSQL's notifications and fences
// move the counters (src/store/postgres/changes.ts, on a real PostgreSQL).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { AssetReads } from '../../src/services/assets/cache.js';
import { rowVersions } from '../../src/store/row-versions.js';
import { SqliteChanges } from '../../src/store/sqlite/changes.js';
import { CHANGES_CHANNEL, PgChanges } from '../../src/store/postgres/changes.js';
import { openStore } from '../../src/store/open.js';
import { sqliteFile } from '../../src/store/sqlite/open.js';
import { freshPostgres, tempDir } from '../helpers/env.js';

describe('AssetReads', () => {
  /** A database of answers by uid, and how often it was read. */
  function fixture(caughtUp: () => true | Promise<boolean> = () => true, max = 100, maxBytes = 0) {
    const rows = new Map<string, { app: string; body: string }>();
    let reads = 0;
    let duringRead: (() => void) | null = null;
    const cache = new AssetReads({
      max,
      maxBytes,
      caughtUp,
      read: async (app, uid) => {
        reads++;
        const row = rows.get(uid);
        if (!row || row.app !== app) throw new Error('not found');
        const body = row.body;
        duringRead?.(); // a change committed after the row was read
        duringRead = null;
        return body;
      },
      readMany: async (app, uids) => {
        reads++;
        const out = new Map<string, string>();
        for (const uid of uids) {
          const row = rows.get(uid);
          if (row && row.app === app) out.set(uid, row.body);
        }
        duringRead?.();
        duringRead = null;
        return out;
      },
    });
    return { cache, rows, reads: () => reads, onNextRead: (f: () => void) => (duringRead = f) };
  }
  const uid = (n: number) => String(100000000000 + n);

  it('answers from memory until the asset, the collections or everything changes', async () => {
    const f = fixture();
    f.rows.set(uid(1), { app: 'A', body: 'v1' });
    assert.equal(await f.cache.answer('A', uid(1)), 'v1');
    assert.equal(await f.cache.answer('A', uid(1)), 'v1');
    assert.equal(f.reads(), 1);
    assert.deepEqual(f.cache.counts, { hit: 1, miss: 1, pageHit: 0, pageMiss: 0, pageShared: 0 });
    for (const change of [() => rowVersions().bumpAssets([uid(1)]), () => rowVersions().bump('c'), () => rowVersions().bumpEverything()]) {
      f.rows.set(uid(1), { app: 'A', body: `v${f.reads() + 1}` });
      change();
      assert.equal(await f.cache.answer('A', uid(1)), `v${f.reads()}`);
    }
    assert.equal(f.reads(), 4);
    rowVersions().bumpAssets([uid(2)]); // another asset (another slot)
    assert.equal(await f.cache.answer('A', uid(1)), 'v4');
    assert.equal(f.reads(), 4);
  });

  it("many: the current entries from memory, the rest in one read, in order, another App's left out", async () => {
    const f = fixture();
    for (const n of [40, 41, 42]) f.rows.set(uid(n), { app: 'A', body: `a${n}` });
    f.rows.set(uid(43), { app: 'B', body: 'b43' });
    assert.equal(await f.cache.answer('A', uid(41)), 'a41');
    assert.deepEqual(await f.cache.many('A', [uid(42), uid(41), uid(43), uid(40)]), ['a42', 'a41', 'a40']);
    assert.equal(f.reads(), 2, 'one read for the three not in memory');
    assert.deepEqual(await f.cache.many('A', [uid(40), uid(41), uid(42)]), ['a40', 'a41', 'a42']);
    assert.equal(f.reads(), 2, 'all in memory now');
    f.rows.set(uid(41), { app: 'A', body: 'a41 edited' });
    f.onNextRead(() => {
      // Committed while the one changed asset was being read again: its entry stays old.
      f.rows.set(uid(41), { app: 'A', body: 'a41 edited twice' });
      rowVersions().bumpAssets([uid(41)]);
    });
    rowVersions().bumpAssets([uid(41)]);
    assert.deepEqual(await f.cache.many('A', [uid(40), uid(41), uid(42)]), ['a40', 'a41 edited', 'a42']);
    assert.deepEqual(await f.cache.many('A', [uid(40), uid(41), uid(42)]), ['a40', 'a41 edited twice', 'a42']);
    assert.equal(f.reads(), 4);
    assert.deepEqual(await f.cache.many('B', [uid(40), uid(43)]), ['b43'], "A's entry is not B's");
  });

  it('a change committed while the row was being read leaves the entry old', async () => {
    const f = fixture();
    f.rows.set(uid(3), { app: 'A', body: 'before' });
    f.onNextRead(() => {
      f.rows.set(uid(3), { app: 'A', body: 'after' });
      rowVersions().bumpAssets([uid(3)]);
    });
    assert.equal(await f.cache.answer('A', uid(3)), 'before');
    assert.equal(await f.cache.answer('A', uid(3)), 'after');
  });

  it('another App is never answered from the entry', async () => {
    const f = fixture();
    f.rows.set(uid(4), { app: 'A', body: 'mine' });
    await f.cache.answer('A', uid(4));
    await assert.rejects(f.cache.answer('B', uid(4)), /not found/);
    assert.equal(await f.cache.answer('A', uid(4)), 'mine');
    assert.equal(f.reads(), 2);
  });

  it('reads the database while changes cannot be known to be counted', async () => {
    let current = false;
    const f = fixture(async () => current);
    f.rows.set(uid(5), { app: 'A', body: 'x' });
    await f.cache.answer('A', uid(5));
    await f.cache.answer('A', uid(5));
    assert.equal(f.reads(), 2);
    current = true;
    await f.cache.answer('A', uid(5));
    assert.equal(f.reads(), 2);
  });

  it('answerNow: the entry at once when it is current, for its App alone; nothing while a change or a wait stands in the way', async () => {
    const f = fixture();
    f.rows.set(uid(6), { app: 'A', body: 'now' });
    assert.equal(f.cache.answerNow('A', uid(6)), undefined, 'not read yet');
    await f.cache.answer('A', uid(6));
    assert.equal(f.cache.answerNow('A', uid(6)), 'now');
    assert.equal(f.cache.answerNow('B', uid(6)), undefined, "another App's");
    assert.deepEqual(f.cache.counts, { hit: 1, miss: 1, pageHit: 0, pageMiss: 0, pageShared: 0 });
    rowVersions().bumpAssets([uid(6)]);
    assert.equal(f.cache.answerNow('A', uid(6)), undefined, 'changed since it was read');
    // A store that must be waited on to know it is caught up (PostgreSQL): `answer` waits, answerNow never does.
    let asked = 0;
    const pg = fixture(async () => (asked++, true));
    pg.rows.set(uid(7), { app: 'A', body: 'later' });
    await pg.cache.answer('A', uid(7));
    assert.equal(pg.cache.answerNow('A', uid(7)), undefined);
    assert.equal(await pg.cache.answer('A', uid(7)), 'later');
    assert.equal(pg.cache.answerNow('A', uid(7)), undefined);
    assert.equal(pg.reads(), 1);
    assert.equal(asked, 2, 'answerNow asked once, and not again after a promise');
  });

  it('page: the joined answer kept whole while it holds the same assets, each unchanged, and only for its App', async () => {
    const f = fixture();
    for (const n of [60, 61, 62]) f.rows.set(uid(n), { app: 'A', body: `a${n}` });
    f.rows.set(uid(63), { app: 'B', body: 'b63' });
    let joins = 0;
    const join = (bodies: string[]) => {
      joins++;
      return `[${bodies.join(',')}]`;
    };
    const page = (app: string, uids: number[]) => f.cache.page(app, 'user:1000:', uids.map(uid), join);
    assert.equal(await page('A', [62, 61, 60]), '[a62,a61,a60]');
    assert.equal(await page('A', [62, 61, 60]), '[a62,a61,a60]');
    assert.equal(joins, 1);
    assert.deepEqual({ hit: f.cache.counts.pageHit, miss: f.cache.counts.pageMiss }, { hit: 1, miss: 1 });
    // An asset of the page changed: joined again, the others from their entries.
    f.rows.set(uid(61), { app: 'A', body: 'a61 edited' });
    rowVersions().bumpAssets([uid(61)]);
    const reads = f.reads();
    assert.equal(await page('A', [62, 61, 60]), '[a62,a61 edited,a60]');
    assert.equal(f.reads(), reads + 1);
    // Other assets on the page (one arrived, one left): joined again.
    assert.equal(await page('A', [61, 60]), '[a61 edited,a60]');
    assert.equal(joins, 3);
    // Another App asking under the same key is never answered from A's page.
    assert.equal(await page('B', [61, 60]), '[]');
    // A page missing an asset (gone since its uids were read) is not kept.
    assert.equal(await page('B', [63, 60]), '[b63]');
    assert.equal(await page('B', [63, 60]), '[b63]');
    assert.equal(joins, 6);
    assert.equal(f.cache.size().pages, 1);
  });

  it('page: requests for a page being read wait for that read, unless an asset of it changed meanwhile or another App asks', async () => {
    const rows = new Map([
      [uid(80), 'a80'],
      [uid(81), 'a81'],
      [uid(82), 'b82'],
    ]);
    let reads = 0;
    let joins = 0;
    /** Each read waits here until the test lets it finish, so that other requests come while it is under way. */
    let finish: (() => void)[] = [];
    let gated = true;
    const cache = new AssetReads({
      max: 100,
      caughtUp: () => true,
      read: async () => {
        throw new Error('not used');
      },
      readMany: async (app, uids) => {
        reads++;
        const out = new Map(uids.filter((u) => (u === uid(82)) === (app === 'B')).map((u) => [u, rows.get(u)!]));
        if (gated) await new Promise<void>((r) => finish.push(r));
        return out;
      },
    });
    const join = (bodies: string[]) => {
      joins++;
      return `[${bodies.join(',')}]`;
    };
    const page = (app: string, uids: number[]) => cache.page(app, 'user:shared', uids.map(uid), join);
    /** Lets the reads under way finish, once there is one (fails if none comes). */
    const settle = async () => {
      for (let turns = 0; finish.length === 0; turns++) {
        if (turns > 1000) throw new Error('no read of the page under way');
        await new Promise((r) => setImmediate(r));
      }
      const f = finish;
      finish = [];
      for (const r of f) r();
    };

    // Three at once: one read, one join, the same answer.
    const three = Promise.all([page('A', [80, 81]), page('A', [80, 81]), page('A', [80, 81])]);
    await settle();
    assert.deepEqual(await three, ['[a80,a81]', '[a80,a81]', '[a80,a81]']);
    assert.deepEqual([reads, joins], [1, 1]);
    assert.deepEqual({ miss: cache.counts.pageMiss, shared: cache.counts.pageShared }, { miss: 1, shared: 2 });

    // A change committed while a read of the page is under way: a request after it reads for itself.
    rowVersions().bumpAssets([uid(81)]); // the kept page is old now
    const before = page('A', [80, 81]);
    while (reads < 2) await new Promise((r) => setImmediate(r));
    rows.set(uid(80), 'a80 edited');
    rowVersions().bumpAssets([uid(80)]);
    const after = page('A', [80, 81]);
    await settle();
    await settle();
    assert.equal(await before, '[a80,a81]', 'read before the change: its rows were taken then');
    assert.equal(await after, '[a80 edited,a81]');
    assert.equal(reads, 3);

    // Another App under the same key, or other assets, never share A's read.
    rowVersions().bumpAssets([uid(80)]);
    gated = false;
    const others = Promise.all([page('A', [80, 81]), page('B', [82]), page('A', [81])]);
    assert.deepEqual(await others, ['[a80 edited,a81]', '[b82]', '[a81]']);
    assert.equal(reads, 5, "A's page once, B's, and A's other page (its asset from memory, nothing to read)");
  });

  it('page: not served, nor kept, while changes cannot be known to be counted; at most a quarter of `maxBytes`', async () => {
    let current = false;
    const f = fixture(async () => current, 100, 40);
    for (const n of [70, 71]) f.rows.set(uid(n), { app: 'A', body: `a${n}` });
    const join = (bodies: string[]) => bodies.join(',');
    await f.cache.page('A', 'k1', [uid(70), uid(71)], join);
    await f.cache.page('A', 'k1', [uid(70), uid(71)], join);
    assert.equal(f.cache.counts.pageHit, 0);
    assert.equal(f.cache.size().pages, 0);
    current = true;
    await f.cache.page('A', 'k1', [uid(70), uid(71)], join); // 7 bytes
    await f.cache.page('A', 'k2', [uid(71)], join); // 3 more: 10, a quarter of 40
    assert.deepEqual(f.cache.size(), { entries: 2, bytes: 6, pages: 2, pageBytes: 10 });
    await f.cache.page('A', 'k3', [uid(70)], join); // over: the oldest page goes
    assert.deepEqual(f.cache.size(), { entries: 2, bytes: 6, pages: 2, pageBytes: 6 });
    await f.cache.page('A', 'k2', [uid(71)], join);
    assert.equal(f.cache.counts.pageHit, 1);
  });

  it('keeps at most `max` entries, the oldest going first', async () => {
    const f = fixture(() => true, 2);
    for (const n of [10, 11, 12]) f.rows.set(uid(n), { app: 'A', body: String(n) });
    for (const n of [10, 11, 12]) await f.cache.answer('A', uid(n));
    await f.cache.answer('A', uid(12));
    await f.cache.answer('A', uid(11));
    assert.equal(f.reads(), 3);
    await f.cache.answer('A', uid(10));
    assert.equal(f.reads(), 4);
  });

  it('keeps at most `maxBytes` of answers, the oldest going first; an answer larger than that is never kept', async () => {
    const f = fixture(() => true, 100, 10);
    for (const [n, body] of [
      [20, 'aaaa'],
      [21, 'bbbb'],
      [22, 'cccc'],
      [23, 'x'.repeat(11)],
    ] as const)
      f.rows.set(uid(n), { app: 'A', body });
    await f.cache.answer('A', uid(20));
    await f.cache.answer('A', uid(21));
    assert.deepEqual(f.cache.size(), { entries: 2, bytes: 8, pages: 0, pageBytes: 0 });
    await f.cache.answer('A', uid(22)); // 12 bytes would be over 10: the oldest goes
    assert.deepEqual(f.cache.size(), { entries: 2, bytes: 8, pages: 0, pageBytes: 0 });
    assert.equal(f.reads(), 3);
    await f.cache.answer('A', uid(21));
    await f.cache.answer('A', uid(22));
    assert.equal(f.reads(), 3, 'the two newest are kept');
    await f.cache.answer('A', uid(20));
    assert.equal(f.reads(), 4, 'the oldest was dropped');
    await f.cache.answer('A', uid(23));
    await f.cache.answer('A', uid(23));
    assert.equal(f.reads(), 6, 'too large to keep: read each time');
    assert.ok(f.cache.size().bytes <= 10);
  });
});

describe('SqliteChanges', () => {
  const db = new SQLite(':memory:');
  db.exec(`create table assets (uid text primary key, name text);
           create table collections (uid text primary key, name text, contract_address text, chain_id integer, next_token_id integer)`);
  const changes = new SqliteChanges(db);
  changes.install();
  db.prepare(`insert into assets values ('100000000020', 'a'), ('100000000021', 'b')`).run();
  db.prepare(`insert into collections values ('c1', 'C', null, 1, 1)`).run();
  after(() => db.close());

  it('bumps the changed assets once their transaction is over, not before', () => {
    const v = rowVersions();
    const [a, b] = [v.asset('100000000020'), v.asset('100000000021')];
    db.exec('begin');
    db.prepare(`update assets set name = 'x' where uid = '100000000020'`).run();
    changes.settle();
    assert.equal(v.asset('100000000020'), a, 'not while the transaction is open');
    db.exec('commit');
    changes.settle();
    assert.equal(v.asset('100000000020'), a + 1);
    assert.equal(v.asset('100000000021'), b, 'the other asset did not change');
    db.prepare(`delete from assets where uid = '100000000021'`).run();
    changes.settle();
    assert.equal(v.asset('100000000021'), b + 1, 'a delete outside a transaction');
  });

  it('bumps the collections only for the columns an asset view shows', () => {
    const v = rowVersions();
    const c = v.collections();
    db.prepare(`update collections set next_token_id = 5 where uid = 'c1'`).run();
    changes.settle();
    assert.equal(v.collections(), c, 'token id ranges are not in the view');
    db.prepare(`update collections set contract_address = '0xabc' where uid = 'c1'`).run();
    changes.settle();
    assert.equal(v.collections(), c + 1);
  });
});

describe('SQLite change feed', () => {
  it("with other processes writing, another connection's commit makes everything old; alone, nothing to check", async () => {
    const dir = tempDir();
    const store = openStore({ dataDir: dir, checkpoints: 'none' });
    const other = new SQLite(sqliteFile(undefined, dir));
    try {
      other.exec('create table t (x integer)');
      const log = pino({ level: 'silent' });
      const shared = store.changeFeed(log, { othersWrite: true })!;
      const alone = store.changeFeed(log, { othersWrite: false })!;
      const v = rowVersions();
      const before = v.everything();
      assert.equal(shared.caughtUp(), true);
      assert.equal(v.everything(), before, 'nothing committed elsewhere yet');
      other.prepare('insert into t values (1)').run();
      assert.equal(alone.caughtUp(), true);
      assert.equal(v.everything(), before, 'a feed of the only writer checks nothing');
      assert.equal(shared.caughtUp(), true);
      assert.equal(v.everything(), before + 1, 'a commit of another connection');
      assert.equal(shared.caughtUp(), true);
      assert.equal(v.everything(), before + 1, 'counted once');
    } finally {
      other.close();
      await store.close();
    }
  });
});

describe('PgChanges (postgres)', () => {
  let pgdb: Awaited<ReturnType<typeof freshPostgres>>;
  let other: pg.Client;
  let changes: PgChanges;
  before(async () => {
    pgdb = await freshPostgres();
    other = new pg.Client({ connectionString: pgdb.url });
    await other.connect();
    changes = new PgChanges({ connectionString: pgdb.url }, pino({ level: 'silent' }));
    await changes.start();
  });
  after(async () => {
    await changes.stop();
    await other.end();
    await pgdb.drop();
  });

  it('once caught up, every notification committed before is counted', async () => {
    const v = rowVersions();
    const [a, b, c] = [v.asset('100000000030'), v.asset('100000000031'), v.collections()];
    await other.query(`select pg_notify('mintworks_changes', 'a:100000000030,100000000031'), pg_notify('mintworks_changes', 'c')`);
    assert.equal(await changes.caughtUp(), true);
    assert.equal(v.asset('100000000030'), a + 1);
    assert.equal(v.asset('100000000031'), b + 1);
    assert.equal(v.collections(), c + 1);
    // Concurrent callers share fences and all get their answer.
    assert.deepEqual(await Promise.all(Array.from({ length: 20 }, () => changes.caughtUp())), Array(20).fill(true));
  });

  it('a change another process committed before the call is counted when caughtUp resolves, not before', async () => {
    for (let round = 0; round < 5; round++) {
      const before = rowVersions().collections();
      // psql commits while this event loop is held: the notification cannot have been read yet.
      execFileSync('psql', [pgdb.url, '-qAtc', `notify ${CHANGES_CHANNEL}, 'c'`]);
      assert.equal(rowVersions().collections(), before, 'not counted before this loop reads it');
      assert.equal(await changes.caughtUp(), true);
      assert.ok(rowVersions().collections() > before, `round ${round}: the change was not counted when caughtUp resolved`);
    }
  });

  it('the reads that ask in one turn share one fence; those of a later turn get one of their own', async () => {
    /** Fences sent so far: each has the next number of the feed's sequence. */
    const fencesSent = () => (changes as unknown as { seq: number }).seq;
    const fenced = async (n: number) => {
      const sent = fencesSent();
      const answers = await Promise.all(Array.from({ length: n }, () => changes.caughtUp()));
      assert.deepEqual(new Set(answers), new Set([true]));
      return fencesSent() - sent;
    };
    assert.equal(await fenced(20), 1);
    assert.equal(await fenced(1), 1);
    assert.equal(await fenced(50), 1);
  });

  it('a lost connection answers false until a new one is listening, which makes everything old', async () => {
    const v = rowVersions();
    const everything = v.everything();
    await other.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and (query like 'listen%' or query like 'notify %')`,
    );
    const answers: boolean[] = [];
    for (let i = 0; i < 200 && !(answers.includes(false) && answers.at(-1) === true); i++) {
      answers.push(await changes.caughtUp());
      if (answers.at(-1) === false) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(answers.includes(false), 'false while the connection was down');
    assert.equal(answers.at(-1), true, 'true again once it is back');
    assert.ok(v.everything() > everything, 'everything cached before is old');
  });

  it('after stop, nothing is current', async () => {
    const stopped = new PgChanges({ connectionString: pgdb.url }, pino({ level: 'silent' }));
    await stopped.start();
    assert.equal(await stopped.caughtUp(), true);
    await stopped.stop();
    assert.equal(await stopped.caughtUp(), false);
  });
});
