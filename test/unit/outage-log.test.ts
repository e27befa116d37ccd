// A retrying loop's failures: a blip is a warning, an outage one error, a recovery starts over.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OutageLog } from '../../src/chain/outage-log.js';

function recorder() {
  const lines: string[] = [];
  const log = {
    warn: (_o: object, msg: string) => lines.push(`warn ${msg}`),
    error: (o: { failing_for_s: number }, msg: string) => lines.push(`error ${msg} ${o.failing_for_s}s`),
  };
  return { lines, log: log as never };
}

describe('OutageLog', () => {
  it('warns once per reason while failing, errs once after the outage time, and starts over when a pass works', () => {
    let now = 0;
    const { lines, log } = recorder();
    const o = new OutageLog(log, 'chain tracker', 30_000, () => now);
    o.failed('fetch failed');
    now = 1_000;
    o.failed('fetch failed');
    now = 2_000;
    o.failed('timeout');
    assert.deepEqual(lines, ['warn chain tracker pass failed, trying again', 'warn chain tracker pass failed, trying again']);
    now = 31_000;
    o.failed('timeout');
    now = 40_000;
    o.failed('timeout');
    assert.deepEqual(lines.slice(2), ['error chain tracker error 31s']);
    o.worked();
    now = 50_000;
    o.failed('timeout');
    assert.deepEqual(lines.slice(3), ['warn chain tracker pass failed, trying again'], 'a new run of failures is a blip again');
  });
});
