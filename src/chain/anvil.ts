// TEMPORARY minimal embedded chain (replaced by the full manager).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from 'pino';

export interface EmbeddedChainOptions { dataDir: string; port: number; chainId: number; logger: Logger; blockTime?: number }
export interface EmbeddedChain { rpcUrl: string; pid: number; stop(): Promise<void>; onExit(cb: (code: number | null, signal: string | null) => void): void }

export function anvilBinaryPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');
}

export async function startEmbeddedChain(opts: EmbeddedChainOptions): Promise<EmbeddedChain> {
  const child = spawn(anvilBinaryPath(), ['--host', '127.0.0.1', '--port', String(opts.port), '--chain-id', String(opts.chainId), '--mixed-mining', '--block-time', String(opts.blockTime ?? 1), '--state', path.join(opts.dataDir, 'chain.json'), '--state-interval', '5', '--silent'], { stdio: 'ignore' });
  const rpcUrl = `http://127.0.0.1:${opts.port}`;
  let exited = false;
  const exitP = new Promise<void>((r) => child.on('exit', () => { exited = true; r(); }));
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' });
      if (r.ok) break;
    } catch {}
    if (exited || Date.now() > deadline) throw new Error('anvil did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { rpcUrl, pid: child.pid!, async stop() { if (!exited) { child.kill('SIGINT'); await exitP; } }, onExit(cb) { child.on('exit', (c, s) => cb(c, s)); } };
}
