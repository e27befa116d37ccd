// What crosses from the creates' thread to the main thread: an API error answers exactly as it would
// have on the main thread (status, envelope, details in order); anything else becomes a 500's message.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fromWireError, toWireError } from '../../src/boot/threads/creates-thread.js';
import { ApiError } from '../../src/util/errors.js';
import { IdempotencyConflict } from '../../src/services/requests/idempotency.js';
import { isUniqueViolation } from '../../src/store/db.js';

// As postMessage copies them.
const clone = <T>(v: T): T => structuredClone(v);

describe("creates' thread answers", () => {
  it('an API error keeps its status, type and details across the thread', () => {
    const sent = ApiError.of('asset_external_id_exists');
    const got = fromWireError(clone(toWireError(sent)));
    assert.ok(got instanceof ApiError);
    assert.equal(got.status, 400);
    assert.deepEqual(got.toBody(), sent.toBody());
    assert.deepEqual(Object.keys((got.toBody() as { error: { detail: object } }).error.detail), ['code', 'field_name', 'message']);
    const validation = ApiError.validation([
      { field: 'a', code: 'required', message: 'm1' },
      { field: 'b', code: 'invalid', message: 'm2' },
    ]);
    assert.deepEqual(fromWireError(clone(toWireError(validation))).message, validation.message);
  });

  it('any other error is an error with its message (a 500), never an API error', () => {
    const got = fromWireError(clone(toWireError(new Error('disk I/O error'))));
    assert.ok(!(got instanceof ApiError));
    assert.equal(got.message, 'disk I/O error');
    assert.equal(fromWireError(clone(toWireError('a string'))).message, 'a string');
  });

  it('an Idempotency-Key answered first by another process stays an IdempotencyConflict (a replay or a 422, not a 500)', () => {
    const got = fromWireError(clone(toWireError(new IdempotencyConflict())));
    assert.ok(got instanceof IdempotencyConflict);
  });

  it('a database error keeps its class name and code (a unique violation is still one)', () => {
    const sent = Object.assign(new Error('duplicate key value violates unique constraint "assets_app_uid_asset_external_id_key"'), { code: '23505' });
    const got = fromWireError(clone(toWireError(sent)));
    assert.equal((got as { code?: string }).code, '23505');
    assert.ok(isUniqueViolation(got, 'asset_external_id'));
    const typed = fromWireError(clone(toWireError(new TypeError('x is not a function'))));
    assert.equal(typed.name, 'TypeError');
  });
});
