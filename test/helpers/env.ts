// Shared test plumbing: free ports, temp dirs, fresh PostgreSQL databases, an HTTP client for the API.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export const PG_BASE = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';

/**
 * DATABASE_POOL_SIZE of the service processes a multi-process file starts on the shared server: its 100
 * connections are shared by the files the integration suite runs at once, and four processes at the
 * default (10 per pool, three pools each) reached ~40 in one file, "too many clients" beside another.
 */
export const SHARED_PG_POOL_SIZE = '4';

/**
 * Where test processes claim the ports they hand out, one file per port: the integration suite runs
 * several files at once, each in a process of its own, and a port one of them was handed must not be
 * handed to another before its server binds it (seen in CI: a service that could not bind, and the
 * test talking to another file's server on that port for minutes).
 */
const PORT_CLAIMS = path.join(os.tmpdir(), 'mintworks-test-ports');
/**
 * The ports handed out: below Linux's ephemeral range (32768-60999), where the kernel picks the local
 * port of every outgoing connection, so a connection cannot take a port between its handing out and
 * the bind. A claim older than CLAIM_MS is an earlier run's, and the port can be handed out again.
 */
const PORTS = { low: 20_000, high: 32_000 };
const CLAIM_MS = 60 * 60_000;

/** A TCP port on 127.0.0.1 no server listens on, and that no other test process was handed. */
export async function freePort(): Promise<number> {
  fs.mkdirSync(PORT_CLAIMS, { recursive: true });
  for (let tries = 0; tries < 2000; tries++) {
    const port = PORTS.low + Math.floor(Math.random() * (PORTS.high - PORTS.low));
    if (claimPort(port) && (await canListen(port))) return port;
  }
  throw new Error(`no free port in ${PORTS.low}-${PORTS.high} after 2000 tries: see the claims in ${PORT_CLAIMS}`);
}

function claimPort(port: number): boolean {
  const file = path.join(PORT_CLAIMS, String(port));
  try {
    fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  try {
    if (Date.now() - fs.statSync(file).mtimeMs < CLAIM_MS) return false;
    fs.rmSync(file, { force: true });
  } catch {
    return false;
  }
  return claimPort(port);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The Demo App a first start writes to DATA_DIR/demo.env: its MW_* variables (URL, API key, token, collection). */
export function demoEnv(dataDir: string): Record<string, string> {
  return Object.fromEntries(
    fs
      .readFileSync(path.join(dataDir, 'demo.env'), 'utf8')
      .split('\n')
      .filter((l) => /^MW_\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

export function tempDir(prefix = 'mintworks-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** `f` on a connection to the server's `postgres` database, closed after it (creating and dropping databases). */
export async function withPgAdmin<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_BASE}/postgres` });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** A new empty PostgreSQL database; returns its URL and a drop function. */
export async function freshPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mw_test_${process.pid}_${Date.now().toString(36)}`;
  await withPgAdmin((c) => c.query(`create database ${name}`));
  return {
    url: `${PG_BASE}/${name}`,
    drop: () => withPgAdmin(async (c) => void (await c.query(`drop database if exists ${name} with (force)`))),
  };
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  raw: string;
  headers: Headers;
}

export class ApiClient {
  constructor(
    readonly base: string,
    readonly apiKey?: string,
    readonly token?: string,
  ) {}

  async call<T = any>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const h: Record<string, string> = { ...headers };
    if (this.apiKey) h['X-API-KEY'] = this.apiKey;
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      h['Content-Type'] ??= 'application/json';
      payload = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await fetch(`${this.base}${p}`, { method, headers: h, body: payload });
    const raw = await res.text();
    let parsed: any;
    try {
      parsed = raw ? JSON.parse(raw) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, raw, headers: res.headers };
  }
  get<T = any>(p: string) {
    return this.call<T>('GET', p);
  }
  post<T = any>(p: string, body?: unknown) {
    return this.call<T>('POST', p, body);
  }
}

/** Polls `fn` until it returns a truthy value or the deadline passes (for asynchronous chain work). */
/**
 * Waits until `measure()` reaches `target`, for as long as it keeps moving: fails only when it has not
 * grown for `stallMs`. For work whose speed depends on the machine (minting beside another load), where
 * any fixed deadline is either too long to catch a hang or too short for a busy machine.
 */
export async function waitForProgress(what: string, measure: () => Promise<number>, target: number, stallMs: number, everyMs = 500): Promise<void> {
  let best = -1;
  let movedAt = Date.now();
  for (;;) {
    const now = await measure().catch(() => best);
    if (now >= target) return;
    if (now > best) {
      best = now;
      movedAt = Date.now();
    } else if (Date.now() - movedAt > stallMs) {
      throw new Error(`stalled waiting for ${what}: ${best} of ${target}, no progress for ${stallMs} ms`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
