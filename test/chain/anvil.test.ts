// Embedded chain manager: start/stop/adopt/state persistence against the real anvil binary.
// Run: node --import tsx --test test/chain/anvil.test.ts
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createPublicClient, createWalletClient, defineChain, http, parseEther, type Hex } from 'viem';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { anvilBinaryPath, anvilPackageFor, startEmbeddedChain, type EmbeddedChain, type EmbeddedChainOptions } from '../../src/chain/anvil.js';

const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
const logger = pino({ level: 'silent' });

let root: string;
const chains: EmbeddedChain[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function newDir(name: string): string {
  return mkdtempSync(join(root, `${name}-`));
}

async function start(o: Partial<EmbeddedChainOptions> & { dataDir: string }): Promise<EmbeddedChain> {
  const chain = await startEmbeddedChain({ port: await freePort(), chainId: 31337, logger, ...o });
  chains.push(chain);
  return chain;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
}

/** pids of anvil processes whose --state file lives under `dir`. */
function anvilsUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const st = argv[argv.indexOf('--state') + 1];
    if (argv[0]?.endsWith('/anvil') && argv.includes('--state') && st?.startsWith(dir + '/') && alive(Number(name))) {
      pids.push(Number(name));
    }
  }
  return pids;
}

function pgrp(pid: number | 'self'): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result: T; error?: unknown };
  assert.equal(body.error, undefined);
  return body.result;
}

const chainIdOf = async (url: string) => Number.parseInt(await rpc<string>(url, 'eth_chainId'), 16);

before(() => {
  root = mkdtempSync(join(tmpdir(), 'mintworks-anvil-test-'));
});

after(async () => {
  await Promise.allSettled(chains.map((c) => c.stop()));
  for (const pid of anvilsUnder(root)) process.kill(pid, 'SIGKILL'); // belt and braces
  rmSync(root, { recursive: true, force: true });
});

describe('embedded anvil', () => {
  it('resolves the anvil binary from the platform package', () => {
    assert.match(anvilBinaryPath(), new RegExp(`${anvilPackageFor(process.platform, process.arch)}/bin/anvil$`));
  });

  it('(a) starts with the configured chain id, in our process group, and writes a pidfile', async () => {
    for (const chainId of [31337, 80002]) {
      const dataDir = newDir(`a-${chainId}`);
      const port = await freePort();
      const chain = await start({ dataDir, port, chainId });
      assert.equal(chain.rpcUrl, `http://127.0.0.1:${port}`);
      assert.equal(await chainIdOf(chain.rpcUrl), chainId);
      assert.equal(pgrp(chain.pid), pgrp('self'), 'anvil must stay in the service process group');
      const pf = JSON.parse(readFileSync(join(dataDir, 'anvil.pid'), 'utf8')) as Record<string, unknown>;
      assert.equal(pf.pid, chain.pid);
      assert.equal(pf.port, port);
      assert.equal(pf.chainId, chainId);
      assert.equal(typeof pf.startedAt, 'string');

      await chain.stop();
      await chain.stop(); // idempotent
      assert.equal(alive(chain.pid), false);
      assert.equal(existsSync(join(dataDir, 'anvil.pid')), false);
      assert.equal(existsSync(join(dataDir, 'chain.json')), true, 'state dumped on SIGINT');
    }
  });

  it('runs every thread of the node at the nice value it is given (WORKER_NICE); an adopted node too', async () => {
    const niceOfThreads = (pid: number) =>
      readdirSync(`/proc/${pid}/task`).map((t) => Number(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(') ')[1].split(' ')[16]));
    const dataDir = newDir('nice');
    const port = await freePort();
    const plain = await start({ dataDir, port, chainId: 31337 });
    assert.ok(niceOfThreads(plain.pid).length > 1, 'anvil runs several threads');
    assert.deepEqual([...new Set(niceOfThreads(plain.pid))], [0], 'no nice value given: unchanged');
    const adopted = await start({ dataDir, port, chainId: 31337, nice: 7 });
    assert.equal(adopted.pid, plain.pid);
    assert.deepEqual([...new Set(niceOfThreads(adopted.pid))], [7], 'every thread, not only the first');
    await adopted.stop();

    const fresh = await start({ dataDir: newDir('nice-fresh'), chainId: 31337, nice: 5 });
    assert.deepEqual([...new Set(niceOfThreads(fresh.pid))], [5]);
    assert.equal(await chainIdOf(fresh.rpcUrl), 31337, 'and it still answers');
    await fresh.stop();
  });

  it('(b) keeps balances, blocks and transactions across stop/start', async () => {
    const dataDir = newDir('b');
    const chainId = 80002;
    const port = await freePort();
    let chain = await start({ dataDir, port, chainId });
    const { pub, to, hash, receipt } = await transfer(chain.rpcUrl, chainId);
    const blockBefore = await pub.getBlockNumber();
    const blockHashBefore = (await pub.getBlock({ blockNumber: receipt.blockNumber })).hash;

    await chain.stop();
    assert.equal(alive(chain.pid), false);

    chain = await start({ dataDir, port, chainId });
    assert.equal(await chainIdOf(chain.rpcUrl), chainId);
    assert.equal(await pub.getBalance({ address: to }), parseEther('1.25'));
    assert.ok((await pub.getBlockNumber()) >= blockBefore, 'block number survived the restart');
    assert.equal((await pub.getBlock({ blockNumber: receipt.blockNumber })).hash, blockHashBefore);
    const again = await pub.getTransactionReceipt({ hash });
    assert.equal(again.status, 'success');
    assert.equal(again.blockNumber, receipt.blockNumber);
    // the chain mines after the restart: a new transaction lands in a new block at once
    const n = await pub.getBlockNumber();
    const next = await transfer(chain.rpcUrl, chainId);
    assert.ok(next.receipt.blockNumber > n, 'mined in a new block');
    await chain.stop();
  });

  it("(b2) mines no block while idle (automine): an idle chain's state does not grow", async () => {
    const chain = await start({ dataDir: newDir('b2'), port: await freePort(), chainId: 31337 });
    const pub = createPublicClient({ transport: http(chain.rpcUrl) });
    const { receipt } = await transfer(chain.rpcUrl, 31337);
    // No event marks a block that is not mined: wait what would have been 3 blocks at one a second.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(await pub.getBlockNumber(), receipt.blockNumber, 'no block while idle');
    await chain.stop();
  });

  it('(c) a second start on the same data dir adopts the running anvil', async () => {
    const dataDir = newDir('c');
    const port = await freePort();
    const first = await start({ dataDir, port, chainId: 80002 });
    let firstExit: [number | null, string | null] | undefined;
    first.onExit((code, signal) => (firstExit = [code, signal]));

    const second = await start({ dataDir, port, chainId: 80002 });
    assert.equal(second.pid, first.pid);
    assert.equal(second.rpcUrl, first.rpcUrl);
    assert.deepEqual(anvilsUnder(dataDir), [first.pid], 'exactly one anvil on the data dir');
    assert.equal(await chainIdOf(second.rpcUrl), 80002);

    await second.stop(); // SIGINT to a non-child, waits until it is gone
    assert.equal(alive(first.pid), false);
    assert.equal(existsSync(join(dataDir, 'anvil.pid')), false);
    await waitFor(async () => firstExit !== undefined, 5_000);
    assert.deepEqual(firstExit, [0, null]); // seen as an unexpected exit by the first handle
    await first.stop(); // no-op now
  });

  it('an adopted anvil automines again (a service that died while a broadcast had paused it)', async () => {
    const dataDir = newDir('automine');
    const port = await freePort();
    const first = await start({ dataDir, port, chainId: 31337 });
    const rpc = (method: string, params: unknown[] = []) =>
      fetch(first.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
        .then((r) => r.json() as Promise<{ result: unknown }>)
        .then((b) => b.result);
    await rpc('evm_setAutomine', [false]);
    assert.equal(await rpc('anvil_getAutomine'), false);
    const second = await start({ dataDir, port, chainId: 31337 });
    assert.equal(second.pid, first.pid, 'adopted');
    assert.equal(await rpc('anvil_getAutomine'), true);
    await second.stop();
  });

  it('restarts an anvil of this data dir that runs on another port', async () => {
    const dataDir = newDir('port');
    const first = await start({ dataDir, chainId: 31337 });
    const port2 = await freePort();
    const second = await start({ dataDir, port: port2, chainId: 31337 });
    assert.notEqual(second.pid, first.pid);
    assert.equal(alive(first.pid), false);
    assert.deepEqual(anvilsUnder(dataDir), [second.pid]);
    assert.equal(await chainIdOf(`http://127.0.0.1:${port2}`), 31337);
    await second.stop();
  });

  it('(d) a pidfile naming a dead pid, or a pid reused by another program, is stale', async () => {
    const dataDir = newDir('d');
    const port = await freePort();
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(join(dataDir, 'anvil.pid'), JSON.stringify({ pid: dead.pid, port, chainId: 31337, startedAt: new Date().toISOString() }));
    let chain = await start({ dataDir, port, chainId: 31337 });
    assert.notEqual(chain.pid, dead.pid);
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'anvil.pid'), 'utf8')).pid, chain.pid);
    await chain.stop();

    const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      writeFileSync(join(dataDir, 'anvil.pid'), JSON.stringify({ pid: bystander.pid, port, chainId: 31337, startedAt: new Date().toISOString() }));
      chain = await start({ dataDir, port, chainId: 31337 });
      assert.notEqual(chain.pid, bystander.pid);
      assert.equal(alive(bystander.pid!), true, 'a non-anvil process named by the pidfile is left alone');
      assert.equal(await chainIdOf(chain.rpcUrl), 31337);
      await chain.stop();
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it('(e) fails fast, naming ANVIL_PORT, when the port is taken by something else', async () => {
    const dataDir = newDir('e');
    const srv = net.createServer();
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const { port } = srv.address() as net.AddressInfo;
    try {
      await assert.rejects(startEmbeddedChain({ dataDir, port, chainId: 31337, logger }), (err: Error) => {
        assert.match(err.message, /ANVIL_PORT/);
        assert.match(err.message, new RegExp(String(port)));
        return true;
      });
      assert.deepEqual(anvilsUnder(dataDir), []);
      assert.equal(existsSync(join(dataDir, 'anvil.pid')), false);
    } finally {
      await new Promise((resolve) => srv.close(resolve));
    }
  });

  it('moves a corrupt state file aside and starts a fresh chain', async () => {
    const dataDir = newDir('corrupt');
    writeFileSync(join(dataDir, 'chain.json'), '{"block": {"number": "0x1', 'utf8');
    const chain = await start({ dataDir, chainId: 31337 });
    assert.equal(await chainIdOf(chain.rpcUrl), 31337);
    const aside = readdirSync(dataDir).filter((f) => f.startsWith('chain.json.corrupt-'));
    assert.equal(aside.length, 1);
    assert.equal(readFileSync(join(dataDir, aside[0]!), 'utf8'), '{"block": {"number": "0x1');
    await chain.stop();
    assert.ok(existsSync(join(dataDir, 'chain.json')));
  });

  it('restores the last good backup when chain.json was truncated by a kill during a dump', async () => {
    const dataDir = newDir('bak');
    const port = await freePort();
    let chain = await start({ dataDir, port });
    const { pub, to } = await transfer(chain.rpcUrl, 31337);
    await chain.stop();
    chain = await start({ dataDir, port }); // loads chain.json and backs it up
    assert.ok(existsSync(join(dataDir, 'chain.json.bak')));
    await chain.stop();
    writeFileSync(join(dataDir, 'chain.json'), ''); // what SIGKILL in the middle of anvil's dump leaves behind
    chain = await start({ dataDir, port });
    assert.equal(await pub.getBalance({ address: to }), parseEther('1.25'));
    assert.equal(readdirSync(dataDir).filter((f) => f.startsWith('chain.json.corrupt-')).length, 1);
    await chain.stop();
  });

  it('calls onExit when anvil dies on its own, not on stop()', async () => {
    const dataDir = newDir('exit');
    const chain = await start({ dataDir, chainId: 31337 });
    const exited = new Promise<[number | null, string | null]>((resolve) => chain.onExit((c, s) => resolve([c, s])));
    process.kill(chain.pid, 'SIGKILL');
    assert.deepEqual(await exited, [null, 'SIGKILL']);
    assert.equal(existsSync(join(dataDir, 'anvil.pid')), false);
    await chain.stop(); // no-op

    const other = await start({ dataDir, chainId: 31337 });
    let called = false;
    other.onExit(() => (called = true));
    await other.stop();
    assert.equal(called, false);
  });
});

/** Sends 1.25 ETH from anvil's first dev account to a fresh address and waits for the receipt. */
async function transfer(rpcUrl: string, chainId: number) {
  const testChain = defineChain({
    id: chainId,
    name: 'mintworks-test',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const pub = createPublicClient({ chain: testChain, transport: http(rpcUrl), pollingInterval: 50 });
  const wallet = createWalletClient({ chain: testChain, transport: http(rpcUrl), account: mnemonicToAccount(ANVIL_MNEMONIC) });
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const hash: Hex = await wallet.sendTransaction({ to, value: parseEther('1.25') });
  const receipt = await pub.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, 'success');
  return { pub, to, hash, receipt };
}

async function waitFor(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
