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
  const othersWrites = async () => Number((await store.db.selectFrom('meta').select('value').where('key', '=', 'other').executeTakeFirst())?.value ?? -1);

  it('read-then-write transactions succeed while another process keeps writing', async () => {
    await migrateToLatest(store);
    // The other process: short write transactions in a tight loop until it is stopped (10 s at most,
    // should this process die first). It is stopped as soon as our transactions are done: a loop that
    // ran for a fixed time took a core from the rest of the suite for nothing.
    const writer = spawn(
      process.execPath,
      [
        '-e',
        `
      const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
      const db = new D(${JSON.stringify(path.join(dir, 'mintworks.sqlite'))});
      db.pragma('busy_timeout = 5000');
      const up = db.prepare("insert into meta(key, value) values ('other', '0') on conflict(key) do update set value = cast(value as integer) + 1");
      const end = Date.now() + 10000;
      process.stdout.write('ready\\n');
      while (Date.now() < end) up.run();
    `,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    await new Promise<void>((resolve) => writer.stdout!.once('data', () => resolve()));
    const othersBefore = await othersWrites();
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
    const othersAfter = await othersWrites();
    writer.kill('SIGKILL');
    await exited;
    assert.ok(othersAfter > othersBefore, `the other process wrote during ours (${othersBefore} → ${othersAfter})`);
    assert.equal(done, 200);
    assert.equal((await store.db.selectFrom('meta').select('value').where('key', '=', 'mine').executeTakeFirstOrThrow()).value, '200', 'no lost update');
  });
});
