// The error catalogue (src/domain/error-codes.ts) is the one list of the API's error codes: every code
// the sources throw is in it with the status they throw it with, and docs/api.md's table is exactly it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODES, fallbackCode } from '../../src/domain/error-codes.js';

const root = path.resolve(import.meta.dirname, '../..');

function* sources(dir: string): Generator<string> {
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) yield* sources(rel);
    else if (e.name.endsWith('.ts')) yield rel;
  }
}

/** (status, code) of every error the sources build with a literal status and code. */
function thrown(): { file: string; status: number | null; code: string }[] {
  const found: { file: string; status: number | null; code: string }[] = [];
  for (const file of sources('src')) {
    if (/error-codes\.ts$|kit\/openapi\.ts$|config\.ts$/.test(file)) continue;
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const m of text.matchAll(/(?:ApiError\.client|errorBody)\((\d{3}), '([a-z_]+)'/g)) found.push({ file, status: Number(m[1]), code: m[2] });
    // Field and precondition codes: `{ code: 'x', … message }` (zod's own 'custom' issues are not answers).
    for (const m of text.matchAll(/code: '([a-z_]+)'(?=[^}\n]*message)/g)) if (m[1] !== 'custom') found.push({ file, status: null, code: m[1] });
  }
  return found;
}

describe('error catalogue', () => {
  it('holds every code the sources throw, with the status they throw it with', () => {
    const all = thrown();
    assert.ok(all.length > 40, `the scan finds the sources' errors (${all.length})`);
    for (const t of all) {
      const entries = ERROR_CODES.filter((e) => e.code === t.code);
      assert.ok(entries.length, `${t.file}: code ${t.code} is not in src/domain/error-codes.ts`);
      if (t.status !== null)
        assert.ok(
          entries.some((e) => e.status === t.status),
          `${t.file}: ${t.code} thrown with ${t.status}, catalogued as ${entries.map((e) => e.status)}`,
        );
    }
  });

  it('names each code once, and one fallback per status at most', () => {
    assert.equal(new Set(ERROR_CODES.map((e) => e.code)).size, ERROR_CODES.length);
    const fallbacks = ERROR_CODES.filter((e) => e.fallback).map((e) => e.status);
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
