// The embedded chain's JSON-RPC endpoint on the loopback: is its port free, does it answer, with which
// chain id.
import net from 'node:net';
import { delay, errCode } from './processes.js';

export const HOST = '127.0.0.1';

/** One JSON-RPC call to the node at `url`: its answer's body (result or error), or null if none came. */
async function call(url: string, method: string, params: unknown[], timeoutMs: number): Promise<{ result?: unknown; error?: { message?: string } } | null> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return res.ok ? ((await res.json()) as { result?: unknown; error?: { message?: string } }) : null;
  } catch {
    return null;
  }
}

/** eth_chainId of the node at `url`, or null if it does not answer properly. */
export async function rpcChainId(url: string, timeoutMs: number): Promise<number | null> {
  const body = await call(url, 'eth_chainId', [], timeoutMs);
  if (typeof body?.result !== 'string' || !/^0x[0-9a-f]+$/i.test(body.result)) return null;
  return Number.parseInt(body.result, 16);
}

/** Turns anvil's automining on (a block per transaction); why not, or null once it did. */
export async function resumeAutomine(url: string, timeoutMs: number): Promise<string | null> {
  const body = await call(url, 'evm_setAutomine', [true], timeoutMs);
  if (!body) return 'no answer';
  return body.error ? (body.error.message ?? 'refused') : null;
}

/** Polls eth_chainId with a short backoff until it answers or `timeoutMs` elapses. */
export async function waitForChainId(url: string, timeoutMs: number, abort?: Promise<unknown>): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  let aborted = false;
  void abort?.then(() => {
    aborted = true;
  });
  let backoff = 25;
  while (!aborted) {
    const left = deadline - Date.now();
    if (left <= 0) return null;
    const id = await rpcChainId(url, Math.min(1_000, Math.max(left, 50)));
    if (id !== null) return id;
    if (aborted || Date.now() + backoff >= deadline) return aborted ? null : rpcChainId(url, 1_000);
    await Promise.race([delay(backoff), abort ?? new Promise(() => {})]);
    backoff = Math.min(backoff * 2, 250);
  }
  return null;
}

/** True if we can bind HOST:port right now (i.e. anvil will be able to). */
export async function portIsFree(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', (err) => {
      if (errCode(err) === 'EADDRINUSE') resolve(false);
      else reject(new Error(`ANVIL_PORT ${port} cannot be used on ${HOST}: ${(err as Error).message}`, { cause: err }));
    });
    srv.listen({ port, host: HOST, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export function portInUseError(port: number, dataDir: string): Error {
  return new Error(
    `ANVIL_PORT ${port} is already in use on ${HOST} by another process (not the embedded anvil of ${dataDir}). ` +
      `Stop that process or set ANVIL_PORT to a free port.`,
  );
}
