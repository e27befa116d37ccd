// A relayer rotation across a power cut: `npm start`'s process group (service and embedded chain) is
// killed with SIGKILL once the rotation's grants are recorded and before they are final (10
// confirmations, a block a second: a window of ~10 s that a test process starved by another load still
// sees); after the restart, `mintworks keys rotate-relayers --resume`
// follows the rotation to its end. Nothing is done twice: each grant and revoke is mined once (recorded
// again only after a revert), and on chain each contract has exactly one OperatorSet(new relayer, true)
// and one OperatorSet(old relayer, false) per relayer.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startServiceGroup, groupAlive } from '../helpers/process-group.js';
import { demoEnv, ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const operatorSet = parseAbi(['event OperatorSet(address indexed account, bool enabled)']);

describe('relayer rotation across a power cut (sqlite)', () => {
  const dataDir = tempDir('mintworks-rotation-crash-');
  let child: ChildProcess | null = null;
  after(async () => {
    if (child?.pid && groupAlive(child.pid)) {
      process.kill(-child.pid, 'SIGTERM');
      await waitFor('service stopped', async () => !groupAlive(child!.pid!), 20_000).catch(() => process.kill(-child!.pid!, 'SIGKILL'));
    }
  });

  it('completes after kill -9 between recorded and final grants, and sends nothing twice', async () => {
    const env = {
      PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      RELAYER_COUNT: '2',
      CHAIN_CONFIRMATIONS: '10',
      // Unniced, the workers record the grants in seconds beside another load too (niced, that took
      // minutes beside two busy loops); what this test looks at is the crash, not the priority.
      WORKER_NICE: '0',
    };
    const base = `http://127.0.0.1:${env.PORT}`;
    const healthy = () => waitFor('health 200', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 200);
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 240_000 });

    child = startServiceGroup(env);
    await healthy();
    const demo = demoEnv(dataDir);
    const api = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 30_000);

    const started = cli(['keys', 'rotate-relayers', '--chain', '31337', '--no-wait', '--json']);
    assert.equal(started.status, 0, started.stderr);
    const rotation = JSON.parse(started.stdout) as { id: number; new_relayers: string[]; old_relayers: string[] };
    assert.equal(rotation.new_relayers.length, 2);
    // A second one is refused (exit 2), naming the way to follow the first.
    const second = cli(['keys', 'rotate-relayers', '--chain', '31337']);
    assert.equal(second.status, 2, second.stderr);
    assert.match(second.stderr, /not finished.*--resume/);

    const db = new SQLite(path.join(dataDir, 'mintworks.sqlite'), { readonly: true });
    const grants = () =>
      db
        .prepare("select handled, count(*) as n from chain_txs where kind = 'relayers.rotation' and ref like ? group by handled")
        .all(`rotation:${rotation.id}:grant:%`) as {
        handled: number;
        n: number;
      }[];
    await waitFor('grants recorded, not yet final', async () => grants().some((g) => g.handled === 0 && g.n > 0), 180_000, 20);
    const pgid = child.pid!;
    process.kill(-pgid, 'SIGKILL');
    await waitFor('process group gone', async () => !groupAlive(pgid), 10_000, 50);
    const atCut = grants();

    child = startServiceGroup(env);
    await healthy();
    const resumed = cli(['keys', 'rotate-relayers', '--chain', '31337', '--resume']);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.match(resumed.stdout, /done/);
    assert.match(resumed.stderr, /\[revoking\]|\[done\]/);

    // Each rotation transaction mined once. One may have been recorded again after a revert: the power
    // cut rewinds the embedded chain past blocks the service had taken for final, so a grant sent anew
    // can be mined before the handover it depended on, sent anew too (a revert changes nothing).
    const refs = db.prepare("select ref, status from chain_txs where kind = 'relayers.rotation' order by id").all() as { ref: string; status: string }[];
    for (const ref of new Set(refs.map((r) => r.ref))) {
      const statuses = refs.filter((r) => r.ref === ref).map((r) => r.status);
      assert.deepEqual(statuses, [...statuses.slice(0, -1).map(() => 'reverted'), 'mined'], `${ref}: mined once, after reverts only`);
    }
    const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${env.ANVIL_PORT}`) });
    const contract = (db.prepare('select contract_address from collections where uid = ?').get(demo.MW_COLLECTION) as { contract_address: string })
      .contract_address as Address;
    const logs = await rpc.getLogs({ address: contract, event: operatorSet[0], fromBlock: 0n });
    const count = (account: string, enabled: boolean) => logs.filter((l) => l.args.account!.toLowerCase() === account && l.args.enabled === enabled).length;
    for (const a of rotation.new_relayers) assert.equal(count(a, true), 1, `${a} granted once`);
    for (const a of rotation.old_relayers) assert.equal(count(a, false), 1, `${a} revoked once`);
    const states = db.prepare('select address, state from relayers where chain_id = 31337 and idx >= 0').all() as { address: string; state: string }[];
    for (const a of rotation.old_relayers) assert.equal(states.find((s) => s.address === a)?.state, 'retired');
    for (const a of rotation.new_relayers) assert.equal(states.find((s) => s.address === a)?.state, 'active');
    db.close();
    console.log(JSON.stringify({ grants_at_cut: atCut, rotation_txs: refs.length }));
  });
});
