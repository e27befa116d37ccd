// The CLI's acts are audited, and `config set public-url` is safe: every `mintworks` command that
// changes state (listed from the CLI's own help, so a new one without a case here fails) writes an audit
// entry — run here, or in the test named for it; `config set public-url` refuses what PUBLIC_URL refuses,
// says what it will repoint, and without a terminal acts only with --yes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/env.js';
import { openStore } from '../../src/store/open.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

describe('the CLI audits its acts; config set public-url asks first', () => {
  let dir = tempDir();
  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], { env: { ...process.env, DATA_DIR: dir, ...env } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  // Read from the database itself (a CLI start per read would double the test's time).
  const actions = async () => {
    const store = openStore({ dataDir: dir });
    try {
      return (await store.db.selectFrom('audit_log').select('action').execute()).map((e) => e.action);
    } finally {
      await store.close();
    }
  };

  it('lists every command that changes state, and each writes its entry', { timeout: 900_000 }, async () => {
    // The leaf commands, from the CLI's help (groups opened down to their leaves).
    const commandsOf = (help: string) =>
      [...(help.split(/^Commands:$/m)[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]).filter((c) => c !== 'help');
    const leaves: string[] = [];
    const walk = async (words: string[]) => {
      const subs = commandsOf((await cli([...words, '--help'])).stdout);
      if (words.length && (!subs.length || words.join(' ') === 'audit')) leaves.push(words.join(' '));
      for (const sub of subs) await walk([...words, sub]);
    };
    await walk([]);
    const reads = new Set([
      'app list',
      'collection list',
      'webhook show',
      'webhook log',
      'reward list',
      'audit',
      'audit verify',
      'config show',
      'chain status',
      'chain txs',
      'chain start',
    ]);
    const app = JSON.parse((await cli(['app', 'create', '--name', 'A', '--environment', 'development', '--json'])).stdout).uid as string;
    const coll = JSON.parse((await cli(['collection', 'create', '--app', app, '--name', 'U', '--symbol', 'U', '--json'])).stdout).uid as string;
    const here: Record<string, [string, string[]]> = {
      'app create': ['app.created', ['app', 'create', '--name', 'B', '--environment', 'development']],
      'app rotate-secret': ['app.secret_rotated', ['app', 'rotate-secret', '--app', app]],
      token: ['app.token_issued', ['token', '--app', app]],
      'collection create': ['collection.created', ['collection', 'create', '--app', app, '--name', 'C', '--symbol', 'C']],
      'collection update': ['collection.updated', ['collection', 'update', '--app', app, '--collection', coll, '--description', 'changed']],
      'webhook set': ['webhook.created', ['webhook', 'set', '--app', app, '--url', 'https://example.com/hook/secret']],
      'reward create': ['reward.created', ['reward', 'create', '--app', app, '--name', 'R', '--token-name', 'R', '--token-symbol', 'R', '--supply', '10']],
      'config set public-url': ['config.public_url_set', ['config', 'set', 'public-url', 'https://mint.example.com', '--yes']],
      'config set chains': ['config.chains_set', ['config', 'set', 'chains']],
      'config set operator-token': ['config.operator_token_set', ['config', 'set', 'operator-token']],
      backup: ['backup.created', ['backup', '--out', path.join(dir, 'bk')]],
    };
    // Audited as well, exercised where what they need runs (a chain, an HSM, a stopped service).
    const elsewhere: Record<string, string> = {
      'chain cancel': 'test/integration/chain-ops.test.ts',
      'chain resync': 'test/integration/chain-ops.test.ts',
      'keys rotate-relayers': 'test/integration/relayer-rotation.sqlite.test.ts',
      'keys rotate-master': 'test/integration/custody-migrate.test.ts',
      'keys migrate': 'test/integration/custody-migrate.test.ts',
      'wallet export': 'test/integration/custody.sqlite.test.ts',
      'chain verify': 'test/integration/chain-verify-suite.ts', // --fix: one entry per fix
      restore: '', // its entry is written into the restored SQLite database
      // Audited in code (src/cli): not exercised by a test yet, each needs a running chain or an event.
      'chain fund': '',
      'webhook redeliver': '',
      'reward withdraw': '',
    };
    const changing = leaves.filter((l) => !reads.has(l));
    assert.ok(changing.length >= 15, `commands listed: ${changing.join(', ')}`);
    assert.deepEqual(
      changing.filter((l) => !here[l] && !(l in elsewhere)),
      [],
      'a command that changes state has no audit case here',
    );
    for (const f of Object.values(elsewhere).filter(Boolean)) assert.ok(fs.existsSync(path.join(root, f)), f);
    for (const [command, [action, args]] of Object.entries(here)) {
      const before = (await actions()).filter((a) => a === action).length;
      const r = await cli(args, { OPERATOR_TOKEN: 'a-new-operator-token-0123456789' });
      assert.equal(r.code, 0, `${command}: ${r.stdout}${r.stderr}`);
      assert.equal((await actions()).filter((a) => a === action).length, before + 1, `${command} wrote ${action}`);
    }
    assert.equal((await cli(['audit', 'verify'])).code, 0);
  });

  it('config set public-url refuses what PUBLIC_URL refuses, and acts only when confirmed', { timeout: 300_000 }, async () => {
    dir = tempDir(); // an installation of its own
    assert.equal((await cli(['app', 'create', '--name', 'A', '--environment', 'development'])).code, 0);
    const shown = async () => JSON.parse((await cli(['config', 'show', '--json'])).stdout).public_url as string | null;
    const was = await shown();
    const bad = await cli(['config', 'set', 'public-url', 'http://u:p@host/x?y#z']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a public URL: it carries credentials/);
    assert.equal(await shown(), was);
    // No terminal, no --yes: it shows what it would do, and does nothing.
    const unasked = await cli(['config', 'set', 'public-url', 'https://new.example.com/mint']);
    assert.equal(unasked.code, 2, unasked.stdout + unasked.stderr);
    assert.ok(unasked.stderr.includes(`Public URL: ${was ?? '(none recorded)'} -> https://new.example.com/mint`), unasked.stderr);
    assert.match(unasked.stderr, /No terminal to ask on .* --yes/);
    assert.equal(await shown(), was);
    const yes = await cli(['config', 'set', 'public-url', 'https://new.example.com/mint/', '--yes']);
    assert.equal(yes.code, 0, yes.stderr);
    assert.equal(await shown(), 'https://new.example.com/mint');
  });
});
