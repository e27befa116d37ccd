// The CLI acts on its installation's chain: it reaches the embedded chain at the URL the service
// recorded (not at the ANVIL_PORT of the shell it runs in), and refuses a node on that URL whose genesis
// block is not the one the installation recorded at its first start — another installation's anvil,
// same chain id 31337 — naming both hashes.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { createPublicClient, http } from 'viem';
import { freePort, tempDir } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { startEmbeddedChain } from '../../src/chain/anvil.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

describe("the CLI's chain is the installation's", () => {
  let t: TestService | null = null;
  const nodes: { stop(): Promise<void> }[] = [];
  after(async () => {
    await t?.stop();
    for (const n of nodes) await n.stop();
  });

  it('reads the recorded chain whatever ANVIL_PORT says, and refuses a foreign chain on its URL naming both genesis hashes', { timeout: 300_000 }, async () => {
    t = await startTestService('sqlite');
    const ours = t.svc.rpcUrl;
    const dataDir = t.dataDir;
    const genesisOf = async (url: string) => (await createPublicClient({ transport: http(url) }).getBlock({ blockNumber: 0n })).hash!.toLowerCase();
    const recorded = await genesisOf(ours);
    // Another installation's development chain, same chain id, on another port.
    const foreignPort = await freePort();
    const foreign = await startEmbeddedChain({ dataDir: tempDir(), port: foreignPort, chainId: 31337, logger: pino({ level: 'silent' }), mixedMining: false });
    nodes.push(foreign);
    const foreignGenesis = await genesisOf(foreign.rpcUrl);
    assert.notEqual(foreignGenesis, recorded, 'two chains, two genesis blocks');

    const cli = (env: Record<string, string>) =>
      run(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'status', '--json'], { env: { ...process.env, DATA_DIR: dataDir, ...env } }).then(
        (r) => ({ code: 0, out: r.stdout + r.stderr, stdout: r.stdout }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr, stdout: e.stdout }),
      );
    // A shell with another ANVIL_PORT (the foreign chain's): the recorded URL is used, the status is ours.
    const status = await cli({ ANVIL_PORT: String(foreignPort) });
    assert.equal(status.code, 0, status.out);
    assert.equal(JSON.parse(status.stdout).chains[0].chain_id, 31337);

    // The service stops; the foreign chain takes its port: the CLI refuses it, naming both hashes.
    const port = Number(new URL(ours).port);
    await t.stop();
    t = null;
    const squatter = await startEmbeddedChain({ dataDir: tempDir(), port, chainId: 31337, logger: pino({ level: 'silent' }), mixedMining: false });
    nodes.push(squatter);
    const squatterGenesis = await genesisOf(squatter.rpcUrl);
    const refused = await cli({});
    assert.equal(refused.code, 1, refused.out);
    assert.ok(refused.out.includes(recorded), `names the recorded genesis: ${refused.out}`);
    assert.ok(refused.out.includes(squatterGenesis), `names the one found: ${refused.out}`);
    assert.match(refused.out, /not this installation's chain 31337/);
  });
});
