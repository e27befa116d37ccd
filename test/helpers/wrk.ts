// HTTP load from `wrk` (Debian's package): a client in a process of its own that costs the machine a
// fraction of what the service does per request, so on a small machine the latency measured is the
// service's, not a JavaScript client's competing for the same cores.
import { spawn } from 'node:child_process';

export interface WrkResult {
  requests: number;
  perSecond: number;
  p50: number; // ms
  p90: number;
  p99: number;
  /** Answers other than 2xx/3xx, and socket errors (connect, read, write, timeout). */
  errors: number;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

/** Parses `wrk --latency`'s report. */
export function parseWrk(out: string): WrkResult {
  const percentile = (p: number) => {
    const m = new RegExp(`^\\s*${p}(?:\\.0+)?%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    if (!m) throw new Error(`wrk printed no ${p}% latency:\n${out}`);
    return Number(m[1]) * UNIT_MS[m[2]];
  };
  const requests = Number(/^\s*(\d+) requests in/m.exec(out)?.[1] ?? Number.NaN);
  const perSecond = Number(/^Requests\/sec:\s+([\d.]+)/m.exec(out)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { requests, perSecond, p50: percentile(50), p90: percentile(90), p99: percentile(99), errors };
}

/** `connections` kept-alive connections asking for `url` for `seconds` (one wrk thread). */
export function wrk(url: string, headers: Record<string, string>, connections: number, seconds: number): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', (e) => reject(new Error(`cannot run wrk (${e.message}): install it (Debian: apt-get install wrk); .ci/run does`)));
    child.once('close', (code) => (code === 0 ? resolve(parseWrk(out)) : reject(new Error(`wrk exited ${code}: ${err}${out}`))));
  });
}
