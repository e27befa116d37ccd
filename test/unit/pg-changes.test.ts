// The change feed's fence on a real PostgreSQL: a cached read waits until every change committed before
// it asked is counted, and the reads that ask in one turn of the event loop share one fence.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import pino from 'pino';
import { CHANGES_CHANNEL, PgChanges } from '../../src/store/postgres/changes.js';
import { rowVersions } from '../../src/store/row-versions.js';
import { PG_BASE } from '../helpers/env.js';

const url = `${PG_BASE}/postgres`;
/** A commit by another process while this event loop is held: its notification cannot have been read yet. */
const notifyFromElsewhere = (payload: string) => execFileSync('psql', [url, '-qAtc', `notify ${CHANGES_CHANNEL}, '${payload}'`]);

describe('PostgreSQL change feed', () => {
  const changes = new PgChanges({ connectionString: url }, pino({ level: 'silent' }));
  /** Fences sent so far: each has the next number of the feed's sequence. */
  const fencesSent = () => (changes as unknown as { seq: number }).seq;
  before(() => changes.start());
  after(() => changes.stop());

  it('caughtUp resolves only once a change committed before the call is counted', async () => {
    for (let round = 0; round < 5; round++) {
      const before = rowVersions().collections();
      notifyFromElsewhere('c');
      assert.equal(rowVersions().collections(), before, 'not counted before this loop reads it');
      assert.equal(await changes.caughtUp(), true);
      assert.ok(rowVersions().collections() > before, `round ${round}: the change was not counted when caughtUp resolved`);
    }
  });

  it('the reads that ask in one turn share one fence; those of a later turn get one of their own', async () => {
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
});
