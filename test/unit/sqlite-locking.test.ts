// Two processes on one SQLite file (the CLI beside the running service): a transaction that reads
// and then writes must wait for the other writer, never fail with "database is locked".
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { tempDir } from '../helpers/env.js';

describe('SQLite transactions across processes', () => {
  const dir = tempDir();
  const store = openStore({ dataDir: dir });
  after(() => store.close());

  it('read-then-write transactions succeed while another process keeps writing', async () => {
    await migrateToLatest(store);
    // The other process: short write transactions in a tight loop for 2 s.
    const writer = spawn(
      process.execPath,
      [
        '-e',
        `
      const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
      const db = new D(${JSON.stringify(path.join(dir, 'mintworks.sqlite'))});
      db.pragma('busy_timeout = 5000');
      const up = db.prepare("insert into meta(key, value) values ('other', '0') on conflict(key) do update set value = cast(value as integer) + 1");
      const end = Date.now() + 2000;
      process.stdout.write('ready\\n');
      while (Date.now() < end) up.run();
    `,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // Listened for now: on a busy machine the writer's 2 s can end before our 200 transactions do.
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    await new Promise<void>((resolve) => writer.stdout!.once('data', () => resolve()));
    let done = 0;
    for (let i = 0; i < 200; i++) {
      await store.db.transaction().execute(async (tx) => {
        const row = await tx.selectFrom('meta').select('value').where('key', '=', 'mine').executeTakeFirst();
        await tx
          .insertInto('meta')
          .values({ key: 'mine', value: String(Number(row?.value ?? 0) + 1) })
          .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(Number(row?.value ?? 0) + 1) }))
          .execute();
      });
      done++;
    }
    await exited;
    assert.equal(done, 200);
    assert.equal((await store.db.selectFrom('meta').select('value').where('key', '=', 'mine').executeTakeFirstOrThrow()).value, '200', 'no lost update');
  });
});
