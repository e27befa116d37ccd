// Operator alerts: what needs an operator before users notice (a relayer running low, a provider down,
// fees over the ceiling, a transaction stuck). Each alert is logged as a warning and, with
// ALERT_WEBHOOK_URL, POSTed there signed like an App's webhook (the same headers, the secret
// ALERT_WEBHOOK_SECRET), through the outbound SSRF guard, retried with growing pauses.
//
// The callers decide when something is worth an alert (once per crossing of a threshold, once per
// stuck transaction): `raise` sends every alert it is given. One module per process (and thread): only
// a process that runs the workers configures a destination, so an alert is not sent twice by the API's
// thread beside them.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { OutboundBlockedError, outboundRequest, type OutboundPolicy } from '../net/outbound.js';
import { signatureHeaders } from '../util/webhook-signing.js';

export type AlertKind = 'relayer.balance_low' | 'chain.waiting_for_fees' | 'chain.provider_down' | 'chain.tx_stuck' | 'chain.divergence';

/** Pauses before each attempt after the first: about 15 minutes in all, then the alert is given up (and logged). */
export const ALERT_RETRY_MS = [2_000, 10_000, 30_000, 120_000, 600_000];
const TIMEOUT_MS = 10_000;

export interface AlertSink {
  url: string;
  secret: string;
  policy: OutboundPolicy;
  log: Logger;
  /** Test seam: the pauses between attempts. */
  retryMs?: readonly number[];
}

let sink: AlertSink | null = null;
let logger: Logger | null = null;
const timers = new Set<NodeJS.Timeout>();
const inFlight = new Set<Promise<unknown>>();

/** Where alerts go (null: logged only). Called by the process that runs the workers. */
export function configureAlerts(s: AlertSink | null, log?: Logger): void {
  sink = s;
  logger = s?.log ?? log ?? null;
}

/** The body of an alert, as POSTed (and documented in docs/chains-operations.md). */
export function alertBody(id: string, kind: AlertKind, data: Record<string, unknown>, atMs: number, attempt: number): string {
  return JSON.stringify({ alert: kind, alert_id: id, time: new Date(atMs).toISOString(), attempt, data });
}

/** Logs the alert and sends it to ALERT_WEBHOOK_URL (when set), retried in the background. */
export function raise(kind: AlertKind, data: Record<string, unknown>): void {
  logger?.warn({ alert: kind, ...data }, `operator alert: ${kind}`);
  if (!sink) return;
  const id = `alert_${randomBytes(12).toString('hex')}`;
  const at = Date.now();
  const target = sink;
  const attempt = (n: number): void => {
    const body = alertBody(id, kind, data, at, n);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Mintworks-Alerts/1',
      ...signatureHeaders([target.secret], id, Math.floor(Date.now() / 1000), body),
    };
    const run = outboundRequest(target.url, { method: 'POST', headers, body, timeoutMs: TIMEOUT_MS, maxBytes: 1024, maxRedirects: 0, policy: target.policy })
      .then((res) => (res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`))
      .catch((err: Error) => {
        // A destination the guard refuses is a setup mistake: said now, not after the last retry.
        if (err instanceof OutboundBlockedError && n === 1)
          target.log.error({ alert: kind, alert_id: id, err: err.message }, 'operator alert refused by the outbound guard');
        return err.message;
      })
      .then((failure) => {
        if (failure === null) return;
        const delays = target.retryMs ?? ALERT_RETRY_MS;
        if (n > delays.length || sink !== target) {
          target.log.error({ alert: kind, alert_id: id, attempts: n, err: failure }, 'operator alert could not be delivered');
          return;
        }
        const t = setTimeout(
          () => {
            timers.delete(t);
            attempt(n + 1);
          },
          delays[n - 1],
        );
        t.unref();
        timers.add(t);
      });
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
  };
  attempt(1);
}

/** Stops retrying (shutdown, tests) after the attempts already under way. */
export async function stopAlerts(): Promise<void> {
  for (const t of timers) clearTimeout(t);
  timers.clear();
  sink = null;
  await Promise.all([...inFlight]);
}
