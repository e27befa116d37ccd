// The SQLite WAL after a burst of writes: a checkpoint copies it back but leaves the file its size, so
// it is truncated once writes have paused, and cut back to the store's limit once SQLite writes it
// again from its start.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { openStore } from '../../src/store/open.js';
import { startCheckpointer } from '../../src/store/sqlite/wal.js';
import { tempDir, waitFor } from '../helpers/env.js';

const walSize = (file: string) => fs.statSync(`${file}-wal`).size;

/** A database in WAL mode whose WAL holds `mb` MB of rows, the connection that wrote them left open. */
function writtenWal(file: string, mb: number): SQLite.Database {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('create table t (x blob)');
  const insert = db.prepare('insert into t (x) values (?)');
  db.transaction(() => {
    for (let i = 0; i < mb * 64; i++) insert.run(Buffer.alloc(16 * 1024, i));
  })();
  return db;
}

describe('the SQLite WAL after a burst', () => {
  const closers: (() => unknown)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('is truncated once nothing new has been written for a few rounds', async () => {
    const file = path.join(tempDir(), 'burst.sqlite');
    const writer = writtenWal(file, 2);
    closers.push(() => writer.close());
    assert.ok(walSize(file) > 2 * 1024 * 1024, `the burst's WAL: ${walSize(file)} bytes`);
    const checkpointer = startCheckpointer(file, 'inline', 10);
    closers.push(() => checkpointer.stop());
    await waitFor('the WAL truncated', async () => walSize(file) === 0, 5_000, 10);
    // Its rows are in the database file.
    assert.equal((writer.prepare('select count(*) as n from t').get() as { n: number }).n, 128);
  });

  it('is truncated once a reader that held it back has ended', async () => {
    const file = path.join(tempDir(), 'read.sqlite');
    const writer = writtenWal(file, 1);
    closers.push(() => writer.close());
    const reader = new SQLite(file);
    closers.push(() => reader.close());
    reader.exec('begin');
    reader.prepare('select count(*) from t').get(); // a read transaction on the WAL's frames
    const checkpointer = startCheckpointer(file, 'inline', 10);
    closers.push(() => checkpointer.stop());
    // Three times the quiet spell: the truncation is tried and cannot finish while the reader is on.
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(walSize(file) > 0, 'truncated under a reader');
    reader.exec('commit');
    await waitFor('the WAL truncated', async () => walSize(file) === 0, 5_000, 10);
  });

  it('is not truncated while writes go on', async () => {
    const file = path.join(tempDir(), 'busy.sqlite');
    const writer = writtenWal(file, 1);
    closers.push(() => writer.close());
    const insert = writer.prepare('insert into t (x) values (?)');
    const checkpointer = startCheckpointer(file, 'inline', 10);
    closers.push(() => checkpointer.stop());
    // A write every few ms for 300 ms: thirty rounds of the checkpointer, none of them quiet.
    const end = Date.now() + 300;
    let smallest = Infinity;
    while (Date.now() < end) {
      insert.run(Buffer.alloc(1024));
      smallest = Math.min(smallest, walSize(file));
      await new Promise((r) => setTimeout(r, 3));
    }
    assert.ok(smallest > 0, 'the WAL was truncated while it was being written');
  });

  it("is cut back to the store's limit by the first commit after it starts again", async () => {
    const dir = tempDir();
    const limit = 256 * 1024;
    const store = openStore({ dataDir: dir, checkpoints: 'none', walSizeLimitBytes: limit });
    closers.push(() => store.close());
    const file = path.join(dir, 'mintworks.sqlite');
    await sql`create table t (x blob)`.execute(store.db);
    await store.db.transaction().execute(async (tx) => {
      for (let i = 0; i < 128; i++) await sql`insert into t (x) values (${Buffer.alloc(16 * 1024, i)})`.execute(tx);
    });
    assert.ok(walSize(file) > 2 * 1024 * 1024, `the burst's WAL: ${walSize(file)} bytes`);
    // Copied back whole (as the service's checkpointer does between writes), then one small write.
    const other = new SQLite(file);
    closers.push(() => other.close());
    const [copied] = other.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
    assert.equal(copied.checkpointed, copied.log);
    await sql`insert into t (x) values (${Buffer.alloc(10)})`.execute(store.db);
    assert.ok(walSize(file) <= limit, `the WAL after the next commit: ${walSize(file)} bytes, limit ${limit}`);
  });
});
