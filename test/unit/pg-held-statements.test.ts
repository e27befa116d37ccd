// Statements held and sent with the next one on PostgreSQL (src/store/postgres/held-statements.ts): the
// parameters written as literals, what goes out in which round trip (a recording `send`), and against a
// real server that a transaction's BEGIN goes out with its first statement, that inlined values answer
// exactly as parameters do, and that a held insert's error is the commit's and writes nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import type pg from 'pg';
import { beginText, COMMIT_TEXT, HeldStatements, heldStatement, ROLLBACK_TEXT } from '../../src/store/postgres/held-statements.js';
import { inlineParameters } from '../../src/store/postgres/inline-parameters.js';
import { pgStoreWithTableFor } from '../helpers/migrated-store.js';

describe('inlineParameters', () => {
  it('writes each parameter as the quoted text pg would send it; a cast array of texts with quotes as ARRAY[…], any other as its array literal', () => {
    assert.equal(
      inlineParameters('select $1::int, $2, $3::text[], $4::text[], $10', [5, "it's", ['a', null, 'b"c'], ['d', null, "e'f"], 2, 3, 4, 5, 6, true]),
      `select '5'::int, 'it''s', ARRAY['a',null,'b"c']::text[], '{"d",NULL,"e''f"}'::text[], 'true'`,
    );
    assert.equal(inlineParameters('select $1', [null]), 'select null');
    assert.equal(inlineParameters('select $1', [{ a: "b'\\" }]), String.raw`select  E'{"a":"b''\\\\"}'`);
    assert.equal(inlineParameters('select $1', [['a', 'b"c']]), String.raw`select  E'{"a","b\\"c"}'`);
    assert.equal(inlineParameters('select $1::int[]', [[]]), "select '{}'::int[]");
  });

  it('leaves what only looks like a parameter: in quotes, identifiers, comments and dollar quotes', () => {
    const text = `select '$1', "a$1", x$1, $tag$ $1 $tag$, $$ $1 $$ -- $1\n/* $1 */, $1`;
    assert.equal(inlineParameters(text, ['v']), `select '$1', "a$1", x$1, $tag$ $1 $tag$, $$ $1 $$ -- $1\n/* $1 */, 'v'`);
    assert.equal(inlineParameters(`select 'it''s $1', $1`, ['v']), `select 'it''s $1', 'v'`);
  });

  it('gives up (null) on bytes, a backslash in the text, an unclosed quote or a parameter it has no value for', () => {
    assert.equal(inlineParameters('select $1', [Buffer.from('ab')]), null);
    assert.equal(inlineParameters(`select E'\\n', $1`, ['v']), null);
    assert.equal(inlineParameters(`select 'open, $1`, ['v']), null);
    assert.equal(inlineParameters('select $2', ['v']), null);
  });
});

describe('HeldStatements: what goes out in which round trip', () => {
  const recording = (named = new Set<string>()) => {
    const sent: { text: string; values?: unknown[] }[] = [];
    const held = new HeldStatements(
      async (text, values) => {
        sent.push({ text, values });
        return { command: 'SELECT', rowCount: 1, rows: [{ text }], fields: [], oid: 0 } as unknown as pg.QueryResult;
      },
      (t) => named.has(t),
    );
    return { held, sent };
  };

  it('BEGIN goes out with the first statement; a held insert with the COMMIT: two round trips', async () => {
    const { held, sent } = recording();
    await held.query(beginText('begin; set local statement_timeout = 5'), []);
    assert.equal(sent.length, 0);
    const first = await held.query('select $1::int', [1]);
    assert.deepEqual(first.rows, [{ text: "begin; set local statement_timeout = 5\n;\nselect '1'::int" }]);
    await held.query(heldStatement('insert into t values ($1)'), ['x']);
    assert.equal(sent.length, 1, 'held, not sent');
    await held.query(COMMIT_TEXT, []);
    assert.deepEqual(
      sent.map((s) => s.text),
      ["begin; set local statement_timeout = 5\n;\nselect '1'::int", "insert into t values ('x')\n;\ncommit"],
    );
  });

  it('a transaction that sent nothing costs nothing to commit or roll back; a begun one rolls back alone', async () => {
    const { held, sent } = recording();
    await held.query(beginText('begin'), []);
    await held.query(COMMIT_TEXT, []);
    await held.query(beginText('begin'), []);
    await held.query(heldStatement('insert into t values ($1)'), ['x']);
    await held.query(ROLLBACK_TEXT, []);
    assert.equal(sent.length, 0);
    await held.query(beginText('begin'), []);
    await held.query('select 1', []);
    await held.query(heldStatement('insert into t values ($1)'), ['x']);
    await held.query(ROLLBACK_TEXT, []);
    assert.deepEqual(
      sent.map((s) => s.text),
      ['begin\n;\nselect 1', 'rollback'],
    );
  });

  it('a named statement, or values that cannot be inlined, go alone after what is held; outside a transaction nothing is held', async () => {
    const { held, sent } = recording(new Set(['select * from t where id = $1']));
    await held.query(beginText('begin'), []);
    await held.query('select * from t where id = $1', [7]);
    await held.query(heldStatement('insert into b values ($1)'), [Buffer.from('x')]);
    await held.query(COMMIT_TEXT, []);
    held.reset();
    await held.query(heldStatement('insert into t values ($1)'), ['y']);
    assert.deepEqual(
      sent.map((s) => [s.text, s.values]),
      [
        ['begin', undefined],
        ['select * from t where id = $1', [7]],
        ['insert into b values ($1)', [Buffer.from('x')]],
        ['commit', undefined],
        ['insert into t values ($1)', ['y']],
      ],
    );
  });

  it('a statement that goes alone keeps its place among statements issued together', async () => {
    const { held, sent } = recording(new Set(['select * from t where id = $1']));
    await held.query(beginText('begin'), []);
    await Promise.all([held.query('select * from t where id = $1', [7]), held.query('select $1::int', [2])]);
    assert.deepEqual(
      sent.map((s) => s.text),
      ['begin', 'select * from t where id = $1', 'select $1::int'],
    );
  });
});

describe('HeldStatements against PostgreSQL', () => {
  const pg = pgStoreWithTableFor({ poolMode: 'session', poolSize: 1, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0 });

  it("a transaction's BEGIN reaches the server with its first statement", async () => {
    // In one simple query every statement starts at the same instant: the transaction's too.
    const same = await pg.store.db
      .transaction()
      .execute(async (tx) => (await sql<{ same: boolean }>`select now() = statement_timestamp() as same`.execute(tx)).rows[0].same);
    assert.equal(same, true);
  });

  it('inlined values answer exactly as the same values sent as parameters', async () => {
    const values = [
      'quote \' and \\ backslash, "double", ünïcode, emoji 🙂',
      ['a', null, 'b,c', 'd"e', 'f\\g', '{h}', ''],
      { k: "v'\\", n: [1, 2] },
      '12345678901234567890.5',
      -42,
      true,
      null,
      [1, null, 3],
      ['{"doc":"a \\"quoted\\" \\\\ value"}', null, '{"n":1}'],
    ];
    const text =
      'select $1::text as a, $2::text[] as b, $3::jsonb as c, $4::numeric as d, $5::int as e, $6::boolean as f, $7::text as g, $8::int[] as h, $9::jsonb[] as i';
    const asParameters = await pg.store.db.executeQuery(CompiledQuery.raw(text, values));
    const inlined = await pg.store.db.transaction().execute((tx) => tx.executeQuery(CompiledQuery.raw(text, values)));
    assert.deepEqual(inlined.rows, asParameters.rows);
    assert.equal((asParameters.rows[0] as { a: string }).a, values[0]);
  });

  it("a held insert's error is the commit's, and the transaction writes nothing", async () => {
    await sql`insert into t values (1, 'one')`.execute(pg.store.db);
    await assert.rejects(
      pg.store.db.transaction().execute(async (tx) => {
        await tx.executeQuery(CompiledQuery.raw(heldStatement('insert into t values ($1, $2)'), [2, 'two']));
        await tx.executeQuery(CompiledQuery.raw(heldStatement('insert into t values ($1, $2)'), [1, 'again']));
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    const { rows } = await sql<{ id: number }>`select id from t order by id`.execute(pg.store.db);
    assert.deepEqual(rows, [{ id: 1 }]);
    // The pool's one connection is out of the failed transaction.
    const { rows: tx } = await sql<{ x: string | null }>`select pg_current_xact_id_if_assigned()::text as x`.execute(pg.store.db);
    assert.equal(tx[0].x, null);
  });

  it('held inserts then a read in the same transaction: the read sees them; a rollback leaves nothing', async () => {
    const seen = await pg.store.db.transaction().execute(async (tx) => {
      await tx.executeQuery(CompiledQuery.raw(heldStatement('insert into t values ($1, $2)'), [3, 'three']));
      return (await sql<{ n: number }>`select count(*)::int as n from t where id = 3`.execute(tx)).rows[0].n;
    });
    assert.equal(seen, 1);
    await assert.rejects(
      pg.store.db.transaction().execute(async (tx) => {
        await sql`select 1`.execute(tx);
        await tx.executeQuery(CompiledQuery.raw(heldStatement('insert into t values ($1, $2)'), [4, 'four']));
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    const { rows } = await sql<{ id: number }>`select id from t order by id`.execute(pg.store.db);
    assert.deepEqual(rows, [{ id: 1 }, { id: 3 }]);
  });
});
