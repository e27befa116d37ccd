// How an attempt is sent: the sender the dispatcher is given (the real one guarded against SSRF, a fake
// in tests), and how its failures and answers are written to the attempt log.
import { outboundRequest, OutboundBlockedError, type OutboundPolicy } from '../net/outbound.js';

export interface WebhookSendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** This delivery may go to a loopback address (a development App on a laptop: local-delivery.ts). */
  allowLoopback?: boolean;
}

export interface WebhookSendResult {
  status: number;
  headers: Record<string, string>;
  /** The start of the response body (the log keeps 1 KiB). */
  body: string;
}

/** Sends one attempt; throws on a network error, a timeout or a blocked address. */
export type WebhookSender = (req: WebhookSendRequest) => Promise<WebhookSendResult>;

export const RESPONSE_LOG_BYTES = 1024;

/** The real sender: SSRF-guarded, no redirects (a 3xx is a failure), reads at most 1 KiB, keep-alive. */
export function httpSender(policy: OutboundPolicy): WebhookSender {
  return async (r) => {
    const res = await outboundRequest(r.url, {
      method: 'POST',
      headers: r.headers,
      body: r.body,
      timeoutMs: r.timeoutMs,
      maxBytes: RESPONSE_LOG_BYTES,
      maxRedirects: 0,
      policy: r.allowLoopback ? { ...policy, allowLoopback: true } : policy,
      signal: r.signal,
      keepAlive: true,
    });
    return { status: res.status, headers: res.headers, body: res.body.toString('utf8') };
  };
}

/** An attempt's failure as the attempt log says it. */
export function describeError(err: unknown): string {
  if (err instanceof OutboundBlockedError) return `blocked: ${err.reason}`;
  const e = err as { code?: string; message?: string };
  const msg = e?.message ?? String(err);
  return e?.code && !msg.includes(e.code) ? `${e.code}: ${msg}` : msg;
}

/** PostgreSQL text cannot hold NUL; a response body might. */
export function clean(s: string | null): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what must be replaced.
  return s === null ? null : s.replace(/\u0000/g, '\uFFFD');
}
