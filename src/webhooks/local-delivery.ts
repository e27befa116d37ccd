// Webhooks to the developer's own machine. A service that only its own machine can reach (it listens on
// loopback, and its public URL is a loopback one: `npm start` as shipped) is a laptop, where the receiver
// under development is on 127.0.0.1 too: its development Apps may deliver there without a setting.
// Anywhere else (HOST=0.0.0.0, a public PUBLIC_URL: a server, behind a proxy or not), and for production
// Apps everywhere, loopback stays refused like every private address, unless the operator sets
// OUTBOUND_ALLOW_PRIVATE=true in the service's environment. Pure rules; the dispatcher and the webhook
// settings apply them.
import type { AppEnvironment } from '../domain/environment.js';
import type { OutboundPolicy } from '../net/outbound.js';
import type { InfraCtx } from '../config/infra-context.js';

interface Place {
  /** HOST: the address the API listens on. */
  host: string;
  /** The installation's public URL (PUBLIC_URL, the recorded one, or the one derived from HOST:PORT). */
  publicUrl: string;
  outboundAllowPrivate: boolean;
}

/** Where this service stands: its HOST and the installation's public URL (the agreed one, not this process's default). */
export function placeOf(ctx: Pick<InfraCtx, 'config' | 'installation'>): Place {
  return { host: ctx.config.host, publicUrl: ctx.installation.publicUrl, outboundAllowPrivate: ctx.config.outboundAllowPrivate };
}

const LOOPBACK_HOSTS = /^(localhost|127(?:\.\d{1,3}){3}|::1|\[::1\])$/i;

/** true when nothing but this machine can reach the service: it listens on loopback and says so. */
export function servesLoopbackOnly(place: Pick<Place, 'host' | 'publicUrl'>): boolean {
  let publicHost: string;
  try {
    publicHost = new URL(place.publicUrl).hostname;
  } catch {
    return false;
  }
  return LOOPBACK_HOSTS.test(place.host) && LOOPBACK_HOSTS.test(publicHost);
}

/** The outbound rules of one App's webhook deliveries. */
export function webhookPolicy(place: Place, environment: AppEnvironment): OutboundPolicy {
  return { allowPrivate: place.outboundAllowPrivate, allowLoopback: environment === 'development' && servesLoopbackOnly(place) };
}

/**
 * What a refused webhook URL or delivery tells the developer to do: which setting, where it is set
 * (the service's environment: the CLI's own does not reach the running service), and why a loopback
 * receiver is refused here.
 */
export function blockedAdvice(place: Place, environment: AppEnvironment, reason: string): string {
  const setIt = "set OUTBOUND_ALLOW_PRIVATE=true in the service's environment (not the CLI's) and restart the service";
  if (!/^loopback/.test(reason)) return `to deliver to private addresses, ${setIt}`;
  if (environment === 'production') return `production Apps never deliver to this machine; to allow it, ${setIt}`;
  return `a development App delivers to this machine only when the service listens on loopback alone (HOST ${place.host}, PUBLIC_URL ${place.publicUrl}); otherwise ${setIt}`;
}
