// SSRF-safe outbound HTTP: every request the service makes to a URL that a user gave it (webhook
// endpoints now, asset images later) goes through here, so a URL can never make the service talk to
// itself, the host's loopback services, the private network or a cloud metadata endpoint.
//
// Three rules make it hold:
//  1. Only http/https, and the host is checked after WHATWG URL normalisation, so numeric tricks
//     (http://0x7f000001/, http://2130706433/, http://0177.0.0.1/) are seen as the 127.0.0.1 they are.
//  2. Hostnames are checked AT CONNECT TIME: the request gets our own `lookup`, which resolves, rejects
//     the connection if any resolved address is forbidden, and hands Node exactly the addresses it
//     checked. A DNS answer that changes between a check and the connect (DNS rebinding) cannot slip
//     through, because there is no second resolution.
//  3. Redirects are followed by hand (or not at all) and every hop goes through rules 1 and 2 again.
// Literal IP hosts are never passed to `lookup` by Node, so they are checked before the request.
import { redactUrl } from './redact-url.js';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

export interface OutboundPolicy {
  /** true lifts the address checks (local development, tests): OUTBOUND_ALLOW_PRIVATE=true. */
  allowPrivate: boolean;
  /**
   * true lifts the check of loopback addresses only (127.0.0.0/8, ::1): a development App's webhook on
   * a service only its own machine can reach (src/webhooks/local-delivery.ts). Private networks, link-local
   * and the rest stay refused.
   */
  allowLoopback?: boolean;
}

export class OutboundBlockedError extends Error {
  /** The URL refused, redacted (origin only): the error may be logged with its fields. */
  readonly url: string;
  constructor(
    url: string,
    readonly reason: string,
  ) {
    super(`outbound request to ${redactUrl(url)} blocked: ${reason}`);
    this.url = redactUrl(url);
    this.name = 'OutboundBlockedError';
  }
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
  /** true when the body was longer than maxBytes and was cut there. */
  truncated: boolean;
}

export interface OutboundRequestOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Bounds the whole request: every hop's connect, headers and body. */
  timeoutMs: number;
  maxBytes: number;
  /** 0 = never follow: a 3xx is returned as it is. */
  maxRedirects: number;
  policy: OutboundPolicy;
  signal?: AbortSignal;
  /**
   * Reuse connections to the same origin (webhooks: one endpoint gets many requests). A pooled socket
   * was checked by the same rules when it connected, and pools are per origin and policy.
   */
  keepAlive?: boolean;
}

type ResolvedAddress = { address: string; family: number };

/**
 * Test-only injection points. Production code never sets them. `resolve` replaces DNS (to simulate a
 * public name, a name that resolves to a private address, or a rebinding answer); `allowAddress` lets a
 * test treat one local address as "public" so a real local server can stand in for an allowed host.
 */
export const outboundTestHooks: {
  resolve: ((hostname: string) => Promise<ResolvedAddress[]>) | null;
  allowAddress: ((ip: string) => boolean) | null;
} = { resolve: null, allowAddress: null };

// ------------------------------------------------------------------------------------ address rules

type V4Rule = [base: string, prefix: number, reason: string];

// First match wins, so the more specific ranges come first.
const V4_RULES: V4Rule[] = [
  ['0.0.0.0', 32, 'unspecified'],
  ['255.255.255.255', 32, 'broadcast'],
  ['0.0.0.0', 8, 'reserved'], // "this network"
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'], // includes the cloud metadata service 169.254.169.254
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V4_TABLE = V4_RULES.map(([base, prefix, reason]) => {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { net: (parseIPv4(base)! & mask) >>> 0, mask, reason };
});

/** Strict dotted-quad decimal (what WHATWG URL and DNS produce). */
function parseIPv4(s: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return null;
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

function v4Reason(v: number): string | null {
  for (const r of V4_TABLE) if ((v & r.mask) >>> 0 === r.net) return r.reason;
  return null;
}

/** 128-bit value of an IPv6 address (zone id dropped, embedded dotted IPv4 tail allowed). */
function parseIPv6(input: string): bigint | null {
  let s = input.replace(/^\[|\]$/g, '');
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (net.isIPv6(s) === false) return null;
  // A dotted IPv4 tail becomes two hex groups.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array<string>(Math.max(fill, 0)).fill('0'), ...rest];
  if (groups.length !== 8) return null;
  let v = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v;
}

const inV6 = (v: bigint, base: bigint, prefix: number): boolean => v >> BigInt(128 - prefix) === base >> BigInt(128 - prefix);
const V6 = (s: string): bigint => parseIPv6(s)!;
const low32 = (v: bigint): number => Number(v & 0xffffffffn);

/**
 * Why an address must not be contacted, or null when it is a public unicast address. Pure.
 * IPv6 is allowed only inside global unicast 2000::/3, minus its special ranges; forms that embed an
 * IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the embedded address.
 */
export function isForbiddenAddress(ip: string): string | null {
  const v4 = parseIPv4(ip);
  if (v4 !== null) return v4Reason(v4);
  const v = parseIPv6(ip);
  if (v === null) return 'not an IP address';
  if (v === 0n) return 'unspecified';
  if (v === 1n) return 'loopback';
  if (inV6(v, V6('::ffff:0:0'), 96)) return v4Reason(low32(v)); // IPv4-mapped
  if (inV6(v, V6('64:ff9b::'), 96)) return v4Reason(low32(v)); // NAT64 well-known prefix
  if (inV6(v, V6('2002::'), 16)) return v4Reason(Number((v >> 80n) & 0xffffffffn)); // 6to4
  if (inV6(v, V6('fc00::'), 7)) return 'private'; // unique local
  if (inV6(v, V6('fe80::'), 10)) return 'link-local';
  if (inV6(v, V6('fec0::'), 10)) return 'private'; // site-local (deprecated)
  if (inV6(v, V6('ff00::'), 8)) return 'multicast';
  if (inV6(v, V6('2001:db8::'), 32)) return 'documentation';
  if (inV6(v, V6('3fff::'), 20)) return 'documentation';
  // 2001::/23: IETF protocol assignments, including Teredo 2001::/32, whose embedded (obfuscated)
  // IPv4 client address we cannot vet.
  if (inV6(v, V6('2001::'), 23)) return 'reserved';
  if (!inV6(v, V6('2000::'), 3)) return 'reserved'; // ::/96 IPv4-compatible, 64:ff9b:1::/48, 100::/64, …
  return null;
}

// ----------------------------------------------------------------------------------------- URL rules

const hostOf = (u: URL): string => u.hostname.replace(/^\[|\]$/g, '');

function checkAddress(url: string, ip: string, policy: OutboundPolicy): void {
  if (policy.allowPrivate) return;
  if (outboundTestHooks.allowAddress?.(ip)) return;
  const reason = isForbiddenAddress(ip);
  if (reason === 'loopback' && policy.allowLoopback) return;
  if (reason) throw new OutboundBlockedError(url, `${reason} address ${ip}`);
}

/** Parses and checks everything that can be checked without DNS: scheme, and a literal IP host. */
function checkUrlShape(url: string, policy: OutboundPolicy): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new OutboundBlockedError(url, 'not a valid URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutboundBlockedError(url, `scheme ${u.protocol} is not allowed (http and https only)`);
  const host = hostOf(u);
  if (!host) throw new OutboundBlockedError(url, 'no host');
  if (net.isIP(host)) checkAddress(url, host, policy);
  return u;
}

async function resolveAll(hostname: string, family = 0): Promise<ResolvedAddress[]> {
  if (outboundTestHooks.resolve) return outboundTestHooks.resolve(hostname);
  return dns.promises.lookup(hostname, { all: true, family, verbatim: true });
}

/**
 * Throws OutboundBlockedError unless the URL is http(s) and every address its host resolves to is
 * allowed. For early feedback (e.g. when a webhook URL is configured); outboundRequest checks again at
 * connect time, which is what actually protects. DNS failures are thrown as they are.
 */
export async function assertAllowedUrl(url: string, policy: OutboundPolicy): Promise<URL> {
  const u = checkUrlShape(url, policy);
  const host = hostOf(u);
  if (net.isIP(host) || policy.allowPrivate) return u;
  const addresses = await resolveAll(host);
  if (addresses.length === 0) throw new OutboundBlockedError(url, `${host} does not resolve`);
  for (const a of addresses) checkAddress(url, a.address, policy);
  return u;
}

/** The `lookup` given to the socket: resolve once, check every address, connect only to those. */
function guardedLookup(url: string, policy: OutboundPolicy): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (err: Error | null, address: string | ResolvedAddress[], family?: number) => void) => {
    resolveAll(hostname, typeof options.family === 'number' ? options.family : 0).then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw new OutboundBlockedError(url, `${hostname} does not resolve`);
          for (const a of addresses) checkAddress(url, a.address, policy);
        } catch (err) {
          return callback(err as Error, '');
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: Error) => callback(err, ''),
    );
  }) as unknown as net.LookupFunction;
}

// -------------------------------------------------------------------------------------- the request

/**
 * Idle pooled sockets are closed after this long: below the 5 s keep-alive timeout of Node's own HTTP
 * server (and most others), so a request seldom meets a socket the receiver is just closing.
 */
const IDLE_SOCKET_MS = 4000;
const MAX_POOLS = 1024;
type Pool = { agent: http.Agent; hooks: typeof outboundTestHooks.resolve; allow: typeof outboundTestHooks.allowAddress };
const pools = new Map<string, Pool>(); // insertion order = least recently used first

/** The keep-alive agent of one origin under one policy (bounded: the least recently used go). */
function pooledAgent(u: URL, policy: OutboundPolicy): http.Agent {
  const key = `${u.protocol}//${u.host}|${policy.allowPrivate}|${policy.allowLoopback === true}`;
  let pool = pools.get(key);
  // Test hooks changed (another rule in force): sockets checked under the old one must not be reused.
  if (pool && (pool.hooks !== outboundTestHooks.resolve || pool.allow !== outboundTestHooks.allowAddress)) {
    pool.agent.destroy();
    pool = undefined;
  }
  if (pool) pools.delete(key);
  else {
    const opts = {
      keepAlive: true,
      maxSockets: 16,
      maxFreeSockets: 16,
      timeout: IDLE_SOCKET_MS,
      scheduling: 'lifo' as const,
      lookup: guardedLookup(u.origin, policy),
    };
    pool = {
      agent: u.protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts),
      hooks: outboundTestHooks.resolve,
      allow: outboundTestHooks.allowAddress,
    };
    if (pools.size >= MAX_POOLS) {
      const [oldest, old] = pools.entries().next().value!;
      old.agent.destroy();
      pools.delete(oldest);
    }
  }
  pools.set(key, pool);
  return pool.agent;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export async function outboundRequest(url: string, opts: OutboundRequestOptions): Promise<OutboundResponse> {
  const controller = new AbortController();
  const timeoutError = new Error(`timed out after ${opts.timeoutMs} ms`);
  const timer = setTimeout(() => controller.abort(timeoutError), opts.timeoutMs);
  const onOuterAbort = () => controller.abort(opts.signal!.reason ?? new Error('aborted'));
  if (opts.signal?.aborted) onOuterAbort();
  else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    let current = url;
    let method = opts.method ?? 'GET';
    let body = opts.body;
    let headers = { ...(opts.headers ?? {}) };
    for (let hop = 0; ; hop++) {
      const u = checkUrlShape(current, opts.policy);
      const res = await requestOnce({ u, href: current, method, headers, body, opts, signal: controller.signal });
      const location = res.headers.location;
      if (!REDIRECTS.has(res.status) || !location || hop >= opts.maxRedirects) return res;
      const next = new URL(location, u);
      // 303, and 301/302 after a POST (what browsers do), become a GET without a body.
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = dropHeaders(headers, ['content-type', 'content-length']);
      }
      // Credentials are for the origin they were given to.
      if (next.origin !== u.origin) headers = dropHeaders(headers, ['authorization', 'cookie']);
      current = next.href;
    }
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}

function dropHeaders(h: Record<string, string>, names: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(h).filter(([k]) => !names.includes(k.toLowerCase())));
}

/** One request of a (possibly redirected) exchange. */
interface Hop {
  u: URL;
  href: string;
  method: string;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
  opts: OutboundRequestOptions;
  signal: AbortSignal;
}

async function requestOnce(hop: Hop): Promise<OutboundResponse> {
  try {
    return await requestOnSocket(hop);
  } catch (err) {
    // A pooled socket the receiver closed meanwhile: nothing reached it, so send once more on a new one.
    if (!(err as { reusedSocket?: boolean }).reusedSocket || hop.signal.aborted) throw err;
    return requestOnSocket(hop);
  }
}

// Long: one request's callbacks share its settle-once state and its socket.
function requestOnSocket({ u, href, method, headers, body, opts, signal }: Hop): Promise<OutboundResponse> {
  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, value?: OutboundResponse) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(value!);
    };
    const onAbort = () => {
      const reason = signal.reason instanceof Error ? signal.reason : new Error('aborted');
      finish(reason);
      req.destroy(reason);
    };
    const mod = u.protocol === 'https:' ? https : http;
    // Without keepAlive, agent: false = a fresh connection per request, through guardedLookup. With it,
    // the origin's pool, whose sockets connected through the same guardedLookup under the same policy.
    const agentOpts = opts.keepAlive ? { agent: pooledAgent(u, opts.policy) } : { agent: false as const, lookup: guardedLookup(href, opts.policy) };
    let responded = false;
    const req = mod.request(u, { method, headers, ...agentOpts }, (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      const done = () =>
        finish(null, {
          status: res.statusCode ?? 0,
          headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')])),
          body: Buffer.concat(chunks, size),
          url: href,
          truncated,
        });
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = opts.maxBytes - size;
        if (chunk.length <= room) {
          chunks.push(chunk);
          size += chunk.length;
          return;
        }
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size += Math.max(room, 0);
        truncated = true;
        done();
        res.destroy(); // stop reading: the rest is not wanted
      });
      res.on('end', done);
      res.on('error', (err) => finish(err));
      res.on('close', () => {
        if (!res.complete && !settled) finish(new Error('connection closed before the response was complete'));
      });
    });
    req.on('error', (err) => {
      // Only a request that got no response at all may be sent again (see requestOnce).
      const code = (err as NodeJS.ErrnoException).code;
      if (req.reusedSocket && !responded && (code === 'ECONNRESET' || code === 'EPIPE')) Object.assign(err, { reusedSocket: true });
      finish(err);
    });
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}
