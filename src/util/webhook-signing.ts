// Webhook signatures, of App webhooks and of the operator's alerts alike. Pure functions of the
// secret(s), the event id, the timestamp and the exact bytes of the body.
//
// One HMAC serves both schemes, so a receiver can use either:
//  - ours, in `x-webook-signature` (the seed's spelling) and `x-webhook-signature`:
//      key-<key id>,signature-<hex HMAC-SHA256(key, "<event_id>.<unix seconds>.<raw body>")>
//  - Standard Webhooks: `webhook-id` (= event id), `webhook-timestamp` (unix seconds) and
//      `webhook-signature: v1,<base64 of the same HMAC>`
// The key is the base64-decoded part of the secret after `whsec_`, as Standard Webhooks defines it,
// so the public `standardwebhooks` library verifies our requests with the secret string as shown.
// During a secret rotation both the new and the old secret sign: Standard Webhooks lists signatures
// space-separated; ours lists `key-…,signature-…` entries space-separated, the current key first.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32; // Standard Webhooks asks for >= 24

export function newWebhookSecret(random: (n: number) => Buffer = randomBytes): string {
  return SECRET_PREFIX + random(SECRET_BYTES).toString('base64');
}

export function isWebhookSecret(s: string): boolean {
  return s.startsWith(SECRET_PREFIX) && secretKey(s).length >= 24;
}

/** The HMAC key: base64 after `whsec_` (a secret without the prefix is taken as base64 too). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/**
 * The key id in `key-<key id>`: the first 8 hex digits of SHA-256 of the key. Derived, so a receiver
 * that holds two secrets during a rotation can tell which one a signature used without being told.
 */
export function keyId(secret: string): string {
  return createHash('sha256').update(secretKey(secret)).digest('hex').slice(0, 8);
}

/** The signed content of both schemes: `${id}.${timestamp}.${body}`. */
export function hmac(secret: string, id: string, timestampSeconds: number, body: string | Buffer): Buffer {
  return createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.`).update(body).digest();
}

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'x-webook-signature': string;
  'x-webhook-signature': string;
}

/** Signature headers for a body, signed by every secret given (current first). */
export function signatureHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string | Buffer): SignatureHeaders {
  if (secrets.length === 0) throw new Error('no webhook secret to sign with');
  const macs = secrets.map((s) => ({ kid: keyId(s), mac: hmac(s, id, timestampSeconds, body) }));
  const ours = macs.map((m) => `key-${m.kid},signature-${m.mac.toString('hex')}`).join(' ');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': macs.map((m) => `v1,${m.mac.toString('base64')}`).join(' '),
    'x-webook-signature': ours,
    'x-webhook-signature': ours,
  };
}

/** How far a signed timestamp may be from the receiver's clock (as Standard Webhooks' libraries allow). */
export const TIMESTAMP_TOLERANCE_S = 5 * 60;

/**
 * Receiver side of our scheme (used by the tests and documented for receivers): true when one entry
 * of the header was made by `secret` for this id, timestamp and body, and the timestamp is within
 * `toleranceSeconds` of `nowSeconds` (default: now, 5 minutes), so a captured request cannot be
 * replayed later.
 */
export function verifyOurSignature(
  header: string,
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string | Buffer,
  opts: { nowSeconds?: number; toleranceSeconds?: number } = {},
): boolean {
  const now = opts.nowSeconds ?? Date.now() / 1000;
  if (!Number.isFinite(timestampSeconds) || Math.abs(now - timestampSeconds) > (opts.toleranceSeconds ?? TIMESTAMP_TOLERANCE_S)) return false;
  const expected = hmac(secret, id, timestampSeconds, body);
  const kid = keyId(secret);
  for (const entry of header.trim().split(/\s+/)) {
    const m = /^key-([^,]+),signature-([0-9a-f]{64})$/.exec(entry);
    if (!m || m[1] !== kid) continue;
    if (timingSafeEqual(Buffer.from(m[2], 'hex'), expected)) return true;
  }
  return false;
}
