// An external development chain for tests, started as its own process like an operator would run one:
// anvil mining on an interval (`--block-time`, no mining on arrival), or Hardhat's node with interval
// mining (automine off). Each binds a port of its own choosing (port 0) and says which on its output:
// a port handed out beforehand could be taken between the handing out and the node's bind (a node that
// starts in seconds), and the wait for an answer would then be answered by whoever took it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { anvilBinaryPath } from '../../src/chain/anvil.js';
import { setDevBalance } from '../../src/chain/dev-funding.js';
import { tempDir, waitFor } from './env.js';

export interface ExternalNode {
  kind: 'anvil' | 'hardhat';
  url: string;
  chainId: number;
  /** JSON-RPC call to the node itself (no proxy). */
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Sets an account's balance (anvil_setBalance or hardhat_setBalance). */
  fund(address: string, wei: bigint): Promise<void>;
  /** The node's method to forget a pooled transaction. */
  dropMethod: string;
  stop(): Promise<void>;
}

async function call<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const j = (await r.json()) as { result?: T; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result as T;
}

/** The URL a node prints once it listens: anvil `Listening on 127.0.0.1:N`, Hardhat `… server at http://127.0.0.1:N/`. */
const LISTENING = /(?:Listening on |server at http:\/\/)(127\.0\.0\.1:\d+)/;

export async function startExternalNode(opts: { kind: 'anvil' | 'hardhat'; chainId?: number; blockTimeS?: number; gasLimit?: number }): Promise<ExternalNode> {
  const chainId = opts.chainId ?? 31337;
  const blockTime = opts.blockTimeS ?? 1;
  let child: ChildProcess;
  if (opts.kind === 'anvil') {
    // Not --quiet: that silences the line saying the port; the request lines that come with it are read and dropped.
    const args = ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(chainId), '--block-time', String(blockTime), '--color', 'never'];
    if (opts.gasLimit) args.push('--gas-limit', String(opts.gasLimit));
    child = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } else {
    // Hardhat reads its network settings from a config file: interval mining, no automine (DESIGN of a public-like chain).
    const dir = tempDir('mintworks-hardhat-');
    const config = `module.exports = { networks: { hardhat: { chainId: ${chainId}, mining: { auto: false, interval: ${blockTime * 1000} }${opts.gasLimit ? `, blockGasLimit: ${opts.gasLimit}` : ''} } } };\n`;
    fs.writeFileSync(path.join(dir, 'hardhat.config.cjs'), config);
    const bin = path.join(path.dirname(createRequire(import.meta.url).resolve('hardhat/package.json')), 'internal', 'cli', 'bootstrap.js');
    // From the checkout (Hardhat runs only from a project that installs it), with the config file made here.
    const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
    child = spawn(process.execPath, [bin, 'node', '--hostname', '127.0.0.1', '--port', '0', '--config', path.join(dir, 'hardhat.config.cjs')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
    });
  }
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  let stdout = '';
  const listening = new Promise<string>((resolve) => {
    const onData = (d: Buffer) => {
      stdout = (stdout + d).slice(-4000);
      const m = LISTENING.exec(stdout);
      if (m) {
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // what it prints later is not read
        resolve(`http://${m[1]}`);
      }
    };
    child.stdout!.on('data', onData);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let url = '';
  try {
    const died = exited.then(() => {
      throw new Error(`${opts.kind} exited: ${stderr}${stdout}`);
    });
    const ready = async () => {
      let timer: NodeJS.Timeout | undefined;
      const silent = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${opts.kind} did not say its port within 60 s: ${stderr}${stdout}`)), 60_000);
      });
      url = await Promise.race([listening, silent]).finally(() => clearTimeout(timer));
      await waitFor(
        `${opts.kind} answering on ${url}`,
        async () => (await call<string>(url, 'eth_chainId').catch(() => null)) === `0x${chainId.toString(16)}`,
        60_000,
        100,
      );
    };
    await Promise.race([died, ready()]);
    died.catch(() => undefined);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    kind: opts.kind,
    url,
    chainId,
    dropMethod: opts.kind === 'anvil' ? 'anvil_dropTransaction' : 'hardhat_dropTransaction',
    rpc: (method, params) => call(url, method, params),
    fund: (address, wei) => setDevBalance((method, params) => call(url, method, params), address, wei),
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}
