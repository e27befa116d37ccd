// An embedded anvil that exits without being stopped is an error, unless this process received the signal
// that stopped it: a Ctrl-C reaches the whole process group, and on a busy machine the child's exit can
// be handled before the signal that caused it. The verdict waits a moment for that signal.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ChildChain, noteInterrupt } from '../../src/chain/anvil/running-chain.js';
import { tempDir, waitFor } from '../helpers/env.js';

/** A child that ends on its own with code 0, as anvil does after saving its state on SIGINT. */
function quickChild() {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  return { child, exited: new Promise<void>((r) => child.once('exit', () => r())) };
}

function capturedLog() {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, log: pino({ level: 'info' }, sink) };
}

/** The verdict's moment, shorter than the service's second: the signal below comes at once. */
const VERDICT_MS = 100;

function chainOf(child: ReturnType<typeof quickChild>['child'], log: pino.Logger) {
  const dir = tempDir('mintworks-exit-verdict-');
  return new ChildChain(
    'http://127.0.0.1:1',
    child,
    { pidPath: path.join(dir, 'anvil.pid'), statePath: path.join(dir, 'state.json') },
    log,
    () => [],
    VERDICT_MS,
  );
}

// In this order: the second test's signal would otherwise also excuse the first test's exit.
describe('the verdict on an exit nobody asked for', () => {
  it('no signal: an error, and the exit listeners are told', async () => {
    const { lines, log } = capturedLog();
    const { child } = quickChild();
    const chain = chainOf(child, log);
    const told = await new Promise<{ code: number | null }>((resolve) => chain.onExit((code) => resolve({ code })));
    assert.deepEqual(told, { code: 0 });
    assert.deepEqual(
      lines.filter((l) => l.level >= 50).map((l) => l.msg),
      ['embedded anvil exited unexpectedly'],
    );
  });

  it('the signal handled just after the exit: expected, said at info, no listener told', async () => {
    const { lines, log } = capturedLog();
    const { child, exited } = quickChild();
    const chain = chainOf(child, log);
    let told = false;
    chain.onExit(() => (told = true));
    await exited;
    noteInterrupt(); // the group's SIGINT, handled after the child's exit
    await waitFor('the verdict', async () => lines.some((l) => l.msg.startsWith('embedded anvil stopped')), 5_000, 20);
    assert.equal(told, false);
    assert.deepEqual(
      lines.filter((l) => l.level >= 50),
      [],
    );
  });
});
