// DATA_DIR permissions (src/util/private-dir.ts), on a real directory.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { preparePrivateDir } from '../../src/util/private-dir.js';

const mode = (p: string) => fs.lstatSync(p).mode & 0o777;

describe('private DATA_DIR', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mw-private-'));
  const umask = process.umask();
  after(() => {
    process.umask(umask);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('creates the directory 0700 and makes later files 0600 by umask', () => {
    process.umask(0o022);
    const dir = path.join(root, 'new', 'data');
    preparePrivateDir(dir);
    assert.equal(mode(dir), 0o700);
    fs.writeFileSync(path.join(dir, 'chain.json'), '{}'); // as anvil or SQLite would: no mode asked for
    fs.mkdirSync(path.join(dir, 'files'));
    assert.equal(mode(path.join(dir, 'chain.json')), 0o600);
    assert.equal(mode(path.join(dir, 'files')), 0o700);
  });

  it('tightens what an earlier version left readable, without following symbolic links', () => {
    process.umask(0o022);
    const dir = path.join(root, 'old');
    fs.mkdirSync(path.join(dir, 'files', 'ab'), { recursive: true, mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    fs.writeFileSync(path.join(dir, 'mintworks.sqlite'), '', { mode: 0o644 });
    fs.writeFileSync(path.join(dir, 'files', 'ab', 'abcd'), 'x', { mode: 0o664 });
    const outside = path.join(root, 'outside.txt');
    fs.writeFileSync(outside, '', { mode: 0o644 });
    fs.symlinkSync(outside, path.join(dir, 'link'));
    preparePrivateDir(dir);
    assert.equal(mode(dir), 0o700);
    assert.equal(mode(path.join(dir, 'mintworks.sqlite')), 0o600);
    assert.equal(mode(path.join(dir, 'files')), 0o700);
    assert.equal(mode(path.join(dir, 'files', 'ab')), 0o700);
    assert.equal(mode(path.join(dir, 'files', 'ab', 'abcd')), 0o600);
    assert.equal(mode(outside), 0o644, 'the link target outside DATA_DIR is not touched');
  });
});
