// The JSON-RPC providers of one chain (a CHAINS entry's `rpc` list), as one viem transport that fails
// over between them. Hosted providers have bad days: a call that meets a connection error, a 5xx, a 429
// or no answer within its time is tried on the next provider, and the one that failed is avoided for a
// while (a 429 for as long as its Retry-After says; never called before then). A node's own answer
// (a JSON-RPC error such as "nonce too low" or a revert) is the chain speaking: it is returned as is.
//
// eth_sendRawTransaction needs care: its answer may be lost after the node took the transaction. The
// transaction is then resolved by its hash (eth_getTransactionByHash on the next provider, or the
// "already known" of a node that has it), never by signing anything again: the bytes, and so the nonce,
// are the ones the sender recorded.
//
// Each provider keeps counts for /metrics and a state for /health; `snapshot()` gives them in a form
// that adds up across threads (the workers' thread does most of the calls, the API thread reports them).
import { HttpRequestError, RpcRequestError, TimeoutError, createTransport, type Hex, type Transport } from 'viem';
import { getHttpRpcClient } from 'viem/utils';
import { rpcFetch } from './rpc-fetch.js';
import { keccakHex } from './signing.js';

export type ProviderErrorKind = 'timeout' | 'connection' | 'http_429' | 'http_5xx' | 'http_other';
export const PROVIDER_ERROR_KINDS: readonly ProviderErrorKind[] = ['timeout', 'connection', 'http_429', 'http_5xx', 'http_other'];

/** `up`: answering; `degraded`: failed lately, avoided while others answer; `down`: failed DOWN_AFTER times in a row; `rate_limited`: a 429, not called until its Retry-After. */
export type ProviderState = 'up' | 'degraded' | 'down' | 'rate_limited';

/** Consecutive failures after which a provider is `down` (and an operator alert goes out). */
export const DOWN_AFTER = 3;
const MAX_BACKOFF_MS = 30_000;
const DEFAULT_RETRY_AFTER_MS = 1000;
const MAX_RETRY_AFTER_MS = 120_000;

/** What one provider did, in this thread: plain numbers, so snapshots of several threads add up. */
export interface ProviderSnapshot {
  chain_id: number;
  index: number;
  /** The URL without its path, query or credentials (hosted providers put their API key there). */
  provider: string;
  state: ProviderState;
  calls: number;
  errors: Record<ProviderErrorKind, number>;
  latency_sum_ms: number;
  latency_count: number;
  last_error: string | null;
  /** When the state last changed (ms since the epoch); null: never. */
  since: number | null;
  /** The last call's time: between two threads' views of one provider, the newer state wins. */
  last_call_at: number | null;
  /** While rate limited: until when (ms since the epoch). */
  retry_at: number | null;
}

/** A provider's URL as shown in /health, /metrics and logs: scheme, host and port only. */
export function redactRpcUrl(url: string): string {
  try {
    const u = new URL(url);
    const hidden = u.pathname.length > 1 || u.search || u.username ? '/…' : '';
    return `${u.protocol}//${u.host}${hidden}`;
  } catch {
    return 'invalid URL';
  }
}

/** Retry-After in ms: seconds or an HTTP date; bounded; a default when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number {
  if (!value) return DEFAULT_RETRY_AFTER_MS;
  const s = value.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(s)) ms = Number(s) * 1000;
  else {
    const t = Date.parse(s);
    ms = Number.isNaN(t) ? DEFAULT_RETRY_AFTER_MS : t - now;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

/** JSON-RPC error codes that providers use for "too many requests" in a 200 answer. */
const RATE_LIMIT_CODES = new Set([429, -32005, -32007]);

/**
 * Whether an error says the provider failed (and the call may go to another one), and how. Null: the
 * node answered (a JSON-RPC error is the chain's answer, the same on every provider).
 */
export function classifyProviderError(err: unknown): { kind: ProviderErrorKind; retryAfterMs?: number } | null {
  if (err instanceof TimeoutError) return { kind: 'timeout' };
  const headers = (err as { headers?: Headers }).headers;
  const retryAfter = () => retryAfterMs(headers?.get?.('retry-after'));
  if (err instanceof RpcRequestError) {
    // A JSON-RPC error body: the node's answer, unless its status or code says the provider refused.
    const status = (err as { status?: number }).status;
    if (status === 429 || RATE_LIMIT_CODES.has(err.code)) return { kind: 'http_429', retryAfterMs: retryAfter() };
    if (status === 502 || status === 503 || status === 504) return { kind: 'http_5xx' };
    return null;
  }
  if (err instanceof HttpRequestError) {
    if (err.status === undefined) return { kind: 'connection' };
    if (err.status === 429) return { kind: 'http_429', retryAfterMs: retryAfter() };
    if (err.status >= 500) return { kind: 'http_5xx' };
    return { kind: 'http_other' };
  }
  return { kind: 'connection' };
}

class Provider {
  readonly label: string;
  private readonly rpc: ReturnType<typeof getHttpRpcClient>;
  state: ProviderState = 'up';
  failures = 0;
  /** Not preferred before this time (after a failure); not called at all before it while rate limited. */
  avoidUntil = 0;
  calls = 0;
  errors: Record<ProviderErrorKind, number> = { timeout: 0, connection: 0, http_429: 0, http_5xx: 0, http_other: 0 };
  latencySumMs = 0;
  latencyCount = 0;
  lastError: string | null = null;
  since: number | null = null;
  lastCallAt: number | null = null;

  constructor(
    readonly index: number,
    readonly url: string,
    label: string,
  ) {
    this.label = label;
    this.rpc = getHttpRpcClient(url, { fetchFn: rpcFetch as unknown as typeof fetch });
  }

  /** One JSON-RPC call; throws the transport's errors (HttpRequestError, TimeoutError, RpcRequestError). */
  async call(body: { method: string; params?: unknown }, timeout: number, signal?: AbortSignal): Promise<unknown> {
    const t0 = performance.now();
    this.calls++;
    this.lastCallAt = Date.now();
    try {
      // rpcFetch reads the answer whole and bounds its size itself.
      const data = (await this.rpc.request({ body, timeout, fetchOptions: signal ? { signal } : undefined, maxResponseBodySize: false }).catch((err) => {
        throw this.withoutUrl(err, body);
      })) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
      if (data.error) throw new RpcRequestError({ body, error: data.error, url: this.label });
      return data.result;
    } finally {
      this.latencySumMs += performance.now() - t0;
      this.latencyCount++;
    }
  }

  /**
   * The transport's error with the provider's label instead of its URL: viem puts the URL in the
   * message, and a hosted provider's URL holds its API key (messages end up in logs and /health).
   */
  private withoutUrl(err: unknown, body: { method: string; params?: unknown }): unknown {
    if (err instanceof TimeoutError) return new TimeoutError({ body, url: this.label });
    if (err instanceof RpcRequestError) {
      const e = err as RpcRequestError & { status?: number; headers?: Headers; data?: unknown };
      return new RpcRequestError({ body, error: { code: e.code, message: e.details, data: e.data }, headers: e.headers, status: e.status, url: this.label });
    }
    if (err instanceof HttpRequestError)
      return new HttpRequestError({
        body,
        cause: err.cause as Error | undefined,
        details: err.details,
        headers: err.headers,
        status: err.status,
        url: this.label,
      });
    return err;
  }

  usable(now: number): boolean {
    return this.state !== 'rate_limited' || now >= this.avoidUntil;
  }
}

export interface ProviderEvents {
  /** A provider changed state (up, degraded, down, rate limited). */
  onStateChange?(p: ProviderSnapshot, previous: ProviderState): void;
}

export interface TransportOptions {
  /** Per call and provider: a provider that does not answer within it is given up for the next. */
  timeoutMs: number;
  /** Rounds over all providers after the first, with a short pause between (0 for probes). */
  retryCount: number;
}

/**
 * An eth_sendRawTransaction under way. `hash` is set once an attempt may have reached a node (its answer
 * was lost): only then is it needed, and it is made then (a mint batch's bytes are tens of kilobytes,
 * and most sends are answered the first time).
 */
interface RawSend {
  hash: Hex | null;
}

export class ProviderSet {
  private readonly providers: Provider[];

  constructor(
    readonly chainId: number,
    urls: readonly string[],
    private readonly events: ProviderEvents = {},
  ) {
    if (urls.length === 0) throw new Error(`chain ${chainId}: no JSON-RPC URL`);
    const labels = urls.map(redactRpcUrl);
    // Two providers on one host (different keys or paths) stay apart in /metrics.
    this.providers = urls.map(
      (u, i) => new Provider(i, u, labels.indexOf(labels[i]) === i && labels.lastIndexOf(labels[i]) === i ? labels[i] : `${labels[i]}#${i + 1}`),
    );
  }

  get size(): number {
    return this.providers.length;
  }

  /** The first URL (what older settings called the chain's RPC URL). */
  get primaryUrl(): string {
    return this.providers[0].url;
  }

  /** A viem transport over these providers. Several transports (different time limits) share their state. */
  transport(opts: TransportOptions): Transport {
    return () =>
      createTransport({
        key: 'failover-http',
        name: 'Failover JSON-RPC',
        type: 'http',
        // Retrying is ours (over the providers): viem's own retry would repeat a failed round as a whole.
        retryCount: 0,
        timeout: opts.timeoutMs,
        request: ({ method, params }, options) => this.request({ method, params }, opts, options?.signal) as Promise<any>,
      });
  }

  /**
   * One call: providers in order of preference (the configured order, skipping those that failed
   * lately while others answer), each at most once a round. A sent transaction whose answer was lost
   * is looked up by its hash before anything is sent again.
   */
  async request(body: { method: string; params?: unknown }, opts: TransportOptions, signal?: AbortSignal): Promise<unknown> {
    const send: RawSend | null = body.method === 'eth_sendRawTransaction' ? { hash: null } : null;
    let last: unknown = null;
    for (let round = 0; round <= opts.retryCount; round++) {
      if (round > 0) await pause(150 * 2 ** (round - 1), signal);
      for (const p of this.preference()) {
        if (signal?.aborted) throw signal.reason;
        if (!p.usable(Date.now())) {
          // Only rate-limited providers are left: wait for the nearest Retry-After if it is within the call's time.
          const wait = p.avoidUntil - Date.now();
          if (wait > opts.timeoutMs) {
            last ??= new HttpRequestError({ url: p.label, status: 429, details: `rate limited: retry after ${Math.ceil(wait / 1000)} s` });
            continue;
          }
          await pause(wait, signal);
        }
        try {
          const result = send ? await this.sendOn(p, body, opts, send) : await p.call(body, opts.timeoutMs, signal);
          this.succeeded(p);
          return result;
        } catch (err) {
          const failure = classifyProviderError(err);
          if (!failure) {
            this.succeeded(p); // the node answered
            throw err;
          }
          // The attempt may have reached the node: the next ones look the transaction up by its hash first.
          if (send) send.hash ??= await keccakHex(((body.params as unknown[])?.[0] ?? '0x') as Hex);
          this.failed(p, failure, err);
          last = err;
        }
      }
    }
    throw last ?? new HttpRequestError({ url: this.providers[0].label, details: 'no provider answered' });
  }

  /**
   * One call on every provider, each on its own (no failover): what each answered, null where it did not.
   * For checks that must hold on all of them (the chain id).
   */
  async onEach(body: { method: string; params?: unknown }, timeoutMs: number): Promise<{ provider: string; result: unknown }[]> {
    return Promise.all(
      this.providers.map(async (p) => {
        try {
          const result = await p.call(body, timeoutMs);
          this.succeeded(p);
          return { provider: p.label, result };
        } catch (err) {
          const failure = classifyProviderError(err);
          if (failure) this.failed(p, failure, err);
          return { provider: p.label, result: null };
        }
      }),
    );
  }

  /** eth_sendRawTransaction on one provider, resolving an earlier attempt whose answer was lost. */
  private async sendOn(p: Provider, body: { method: string; params?: unknown }, opts: TransportOptions, send: RawSend): Promise<unknown> {
    if (send.hash && (await p.call({ method: 'eth_getTransactionByHash', params: [send.hash] }, opts.timeoutMs))) return send.hash;
    try {
      return await p.call(body, opts.timeoutMs);
    } catch (err) {
      if (!send.hash || !(err instanceof RpcRequestError)) throw err;
      const msg = `${err.details} ${err.shortMessage}`;
      if (/already known|known transaction|already imported|already exists/i.test(msg)) return send.hash;
      // Mined meanwhile (its nonce is used): the chain knows it under this hash.
      if (/nonce too low|nonce has already been used/i.test(msg) && (await p.call({ method: 'eth_getTransactionByHash', params: [send.hash] }, opts.timeoutMs)))
        return send.hash;
      throw err;
    }
  }

  /** Usable providers, healthy ones first in the configured order, then those avoided after a failure. */
  private preference(): Provider[] {
    const now = Date.now();
    // A provider whose pause is over is tried again in its place: the primary is taken back.
    const rank = (p: Provider) => (now >= p.avoidUntil ? 0 : p.state === 'rate_limited' ? 2 : 1);
    return [...this.providers].sort((a, b) => rank(a) - rank(b) || (rank(a) === 2 ? a.avoidUntil - b.avoidUntil : a.index - b.index));
  }

  private succeeded(p: Provider): void {
    p.failures = 0;
    p.avoidUntil = 0;
    this.setState(p, 'up');
  }

  private failed(p: Provider, f: { kind: ProviderErrorKind; retryAfterMs?: number }, err: unknown): void {
    p.errors[f.kind]++;
    p.lastError = `${f.kind}: ${shortError(err)}`;
    if (f.kind === 'http_429') {
      p.avoidUntil = Date.now() + (f.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS);
      this.setState(p, 'rate_limited');
      return;
    }
    p.failures++;
    p.avoidUntil = Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (p.failures - 1));
    this.setState(p, p.failures >= DOWN_AFTER ? 'down' : 'degraded');
  }

  private setState(p: Provider, state: ProviderState): void {
    if (p.state === state) return;
    const previous = p.state;
    p.state = state;
    p.since = Date.now();
    this.events.onStateChange?.(this.snapshotOf(p), previous);
  }

  private snapshotOf(p: Provider): ProviderSnapshot {
    return {
      chain_id: this.chainId,
      index: p.index,
      provider: p.label,
      state: p.state,
      calls: p.calls,
      errors: { ...p.errors },
      latency_sum_ms: p.latencySumMs,
      latency_count: p.latencyCount,
      last_error: p.lastError,
      since: p.since,
      last_call_at: p.lastCallAt,
      retry_at: p.state === 'rate_limited' ? p.avoidUntil : null,
    };
  }

  snapshot(): ProviderSnapshot[] {
    return this.providers.map((p) => this.snapshotOf(p));
  }
}

/**
 * One view of each provider from the snapshots of several threads: counts added up, the state of the
 * thread that called it last.
 */
export function mergeSnapshots(...lists: ProviderSnapshot[][]): ProviderSnapshot[] {
  const out = new Map<string, ProviderSnapshot>();
  for (const s of lists.flat()) {
    const key = `${s.chain_id}:${s.index}`;
    const seen = out.get(key);
    if (!seen) {
      out.set(key, { ...s, errors: { ...s.errors } });
      continue;
    }
    const newer = (s.last_call_at ?? 0) > (seen.last_call_at ?? 0) ? s : seen;
    const errors = Object.fromEntries(PROVIDER_ERROR_KINDS.map((k) => [k, seen.errors[k] + s.errors[k]])) as Record<ProviderErrorKind, number>;
    out.set(key, {
      ...newer,
      calls: seen.calls + s.calls,
      errors,
      latency_sum_ms: seen.latency_sum_ms + s.latency_sum_ms,
      latency_count: seen.latency_count + s.latency_count,
      last_error: newer.last_error ?? seen.last_error,
    });
  }
  return [...out.values()].sort((a, b) => a.chain_id - b.chain_id || a.index - b.index);
}

/** What /health shows of a provider. */
export function providerHealth(s: ProviderSnapshot) {
  const errors = PROVIDER_ERROR_KINDS.reduce((n, k) => n + s.errors[k], 0);
  return {
    provider: s.provider,
    state: s.state,
    calls: s.calls,
    errors,
    latency_ms: s.latency_count ? Math.round(s.latency_sum_ms / s.latency_count) : null,
    last_error: s.last_error,
    since: s.since === null ? null : new Date(s.since).toISOString(),
    ...(s.retry_at ? { retry_at: new Date(s.retry_at).toISOString() } : {}),
  };
}

function shortError(err: unknown): string {
  const e = err as { shortMessage?: string; details?: string; message?: string; status?: number };
  const text = e.details || e.shortMessage || e.message || String(err);
  return (e.status ? `HTTP ${e.status} ` : '') + text.split('\n')[0].slice(0, 200);
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
