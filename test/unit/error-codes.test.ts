// The error catalogue (src/domain/error-codes.ts) is the one list of the API's error codes: errors are
// built from it by code (the compiler refuses a code it does not hold), and docs/api.md's table is exactly it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODES, errorEntry, fallbackCode } from '../../src/domain/error-codes.js';
import { ApiError, errorBody } from '../../src/util/errors.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('error catalogue', () => {
  it('gives an error built by its code the status, message and field it lists', () => {
    const byCode = ApiError.of as (code: string, message?: string) => ApiError; // the loop's codes are one union
    for (const e of ERROR_CODES) {
      if ('field' in e) continue; // a field's code is answered by ApiError.validation
      const err = byCode(e.code, 'message' in e ? undefined : 'given');
      assert.equal(err.status, e.status, e.code);
      assert.equal(err.type, e.status >= 500 ? 'server_error' : 'client_error', e.code);
      assert.deepEqual(err.details, [
        'fieldName' in e ? { code: e.code, field_name: e.fieldName, message: e.message } : { code: e.code, message: 'message' in e ? e.message : 'given' },
      ]);
    }
    assert.deepEqual(ApiError.of('asset_name_exists').toBody(), {
      success: false,
      error: { type: 'client_error', detail: { code: 'asset_name_exists', message: 'Asset with this name already exists' } },
    });
    assert.deepEqual(Object.keys((ApiError.of('duplicate_nonce').toBody() as { error: { detail: object } }).error.detail), ['code', 'field_name', 'message']);
    assert.equal(ApiError.of('not_found', 'User not found.').status, 404);
    assert.deepEqual(errorBody('internal_error', 'x'), { success: false, error: { type: 'server_error', detail: { code: 'internal_error', message: 'x' } } });
    assert.equal(errorEntry('database_unavailable').status, 503);
  });

  it('is a type: a code it does not hold, or a code without a message given none, does not compile', () => {
    // Checked by `npm run typecheck`: each line below must fail to compile, or the check fails.
    const misspelt = () =>
      // @ts-expect-error 'asset_nmae_exists' is not a catalogued code
      ApiError.of('asset_nmae_exists');
    const withoutMessage = () =>
      // @ts-expect-error 'no_wallet' has no catalogued message: the thrower must give one
      ApiError.of('no_wallet');
    const fieldCodeAlone = () =>
      // @ts-expect-error a field's code is answered as a validation error, never alone
      ApiError.of('invalid', 'm');
    const unknownField = () =>
      // @ts-expect-error a validation error's field codes are the catalogue's field codes
      ApiError.validation([{ field: 'x', code: 'not_found', message: 'm' }]);
    // At run time the catalogue refuses them too (what a cast past the compiler would reach).
    assert.throws(misspelt);
    assert.equal(withoutMessage().details[0].message, undefined);
    assert.equal(unknownField().details[0].code, 'not_found');
    assert.equal(fieldCodeAlone().type, 'client_error');
  });

  it('names each code once, and one fallback per status at most', () => {
    assert.equal(new Set(ERROR_CODES.map((e) => e.code)).size, ERROR_CODES.length);
    const fallbacks = ERROR_CODES.filter((e) => 'fallback' in e).map((e) => e.status);
    assert.equal(new Set(fallbacks).size, fallbacks.length);
    assert.equal(fallbackCode(404), 'not_found');
    assert.equal(fallbackCode(502), 'internal_error');
    assert.equal(fallbackCode(418), 'bad_request');
  });

  it('is the table of docs/api.md, row for row', () => {
    const doc = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => `${m[1]} ${m[2]} ${m[3]}`);
    const expected = [...ERROR_CODES].sort((a, b) => a.status - b.status).map((e) => `${e.status} ${e.code} ${e.when}`);
    assert.deepEqual(rows, expected);
  });
});
