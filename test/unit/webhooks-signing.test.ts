// Signatures and the request body of a webhook attempt, checked with the public `standardwebhooks`
// library and by recomputing our own header independently.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { isWebhookSecret, keyId, newWebhookSecret, secretKey, signatureHeaders, verifyOurSignature } from '../../src/util/webhook-signing.js';
import { buildBody, buildRequest, type WebhookEvent } from '../../src/webhooks/message.js';

const event: WebhookEvent = {
  id: '5f0c5f6e-6a3b-4f0e-9d5e-1b2f3c4d5e6f',
  type: 'asset.minted',
  appUid: '816379099131',
  eventTime: '2024-02-26T13:12:31.798296Z',
  payload: JSON.stringify({ asset: { uid: '123456789012', name: 'Sword', attributes: [{ trait_type: 'power', value: 9 }], note: 'ünïcödé ✓' } }),
};

/** Our header, recomputed from docs/api.md (Webhooks) without the module's helpers. */
function expectedOurs(secret: string, id: string, ts: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('hex');
  return `signature-${mac}`;
}

describe('webhook secrets', () => {
  it('are whsec_ + base64 of 32 random bytes', () => {
    const s = newWebhookSecret();
    assert.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(secretKey(s).length, 32);
    assert.ok(isWebhookSecret(s));
    assert.notEqual(newWebhookSecret(), s);
    assert.equal(isWebhookSecret('whsec_' + Buffer.alloc(16).toString('base64')), false); // too short
    assert.match(keyId(s), /^[0-9a-f]{8}$/);
  });
});

describe('webhook signatures', () => {
  it('verify with standardwebhooks and with our header, from the same HMAC', () => {
    const secret = newWebhookSecret();
    const now = new Date();
    const { body, headers } = buildRequest(event, 1, now.getTime(), [secret]);
    const ts = Math.floor(now.getTime() / 1000);
    assert.equal(headers['webhook-id'], event.id);
    assert.equal(headers['webhook-timestamp'], String(ts));

    const parsed = new Webhook(secret).verify(body, headers) as Record<string, unknown>;
    assert.equal(parsed.event_id, event.id);

    const ours = headers['x-webook-signature'];
    assert.equal(headers['x-webhook-signature'], ours, 'both spellings carry the same value');
    assert.equal(ours, `key-${keyId(secret)},${expectedOurs(secret, event.id, ts, body)}`);
    assert.ok(verifyOurSignature(ours, secret, event.id, ts, body));

    // One HMAC, two encodings.
    const hex = ours.split(',signature-')[1];
    assert.equal(headers['webhook-signature'], `v1,${Buffer.from(hex, 'hex').toString('base64')}`);
    // And exactly what the library itself would sign.
    assert.equal(headers['webhook-signature'], new Webhook(secret).sign(event.id, now, body));
  });

  it('fail for another secret, a changed body, id or timestamp', () => {
    const secret = newWebhookSecret();
    const other = newWebhookSecret();
    const t = Date.now();
    const ts = Math.floor(t / 1000);
    const { body, headers } = buildRequest(event, 1, t, [secret]);
    assert.throws(() => new Webhook(other).verify(body, headers), WebhookVerificationError);
    assert.throws(() => new Webhook(secret).verify(body.replace('Sword', 'Swore'), headers), WebhookVerificationError);
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'other' }), WebhookVerificationError);
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(ts + 1) }), WebhookVerificationError);
    const ours = headers['x-webook-signature'];
    assert.equal(verifyOurSignature(ours, other, event.id, ts, body), false);
    assert.equal(verifyOurSignature(ours, secret, event.id, ts, body + ' '), false);
    assert.equal(verifyOurSignature(ours, secret, event.id, ts + 1, body), false);
    assert.equal(verifyOurSignature(ours, secret, 'other', ts, body), false);
  });

  it('our receiver helper refuses a timestamp more than 5 minutes from its clock (replays of captured requests)', () => {
    const secret = newWebhookSecret();
    const t = Date.now();
    const ts = Math.floor(t / 1000);
    const { body, headers } = buildRequest(event, 1, t, [secret]);
    const ours = headers['x-webook-signature'];
    assert.ok(verifyOurSignature(ours, secret, event.id, ts, body, { nowSeconds: ts + 300 }));
    assert.ok(verifyOurSignature(ours, secret, event.id, ts, body, { nowSeconds: ts - 300 }), 'a receiver clock behind ours');
    assert.equal(verifyOurSignature(ours, secret, event.id, ts, body, { nowSeconds: ts + 301 }), false);
    assert.equal(verifyOurSignature(ours, secret, event.id, ts, body, { nowSeconds: ts - 301 }), false);
    assert.equal(verifyOurSignature(ours, secret, event.id, ts, body, { nowSeconds: ts + 3600, toleranceSeconds: 3600 }), true);
    assert.equal(verifyOurSignature(ours, secret, event.id, NaN, body), false);
    // The default is the real clock: a request signed an hour ago is refused even with a valid HMAC.
    const old = buildRequest(event, 1, t - 3600_000, [secret]);
    assert.equal(verifyOurSignature(old.headers['x-webook-signature'], secret, event.id, ts - 3600, old.body), false);
  });

  it('during a rotation carry both signatures, each verifiable on its own', () => {
    const fresh = newWebhookSecret();
    const old = newWebhookSecret();
    const t = Date.now();
    const ts = Math.floor(t / 1000);
    const { body, headers } = buildRequest(event, 3, t, [fresh, old]);
    const sigs = headers['webhook-signature'].split(' ');
    assert.equal(sigs.length, 2);
    assert.ok(sigs.every((s) => s.startsWith('v1,')));
    new Webhook(fresh).verify(body, headers);
    new Webhook(old).verify(body, headers);
    const entries = headers['x-webook-signature'].split(' ');
    assert.deepEqual(entries, [`key-${keyId(fresh)},${expectedOurs(fresh, event.id, ts, body)}`, `key-${keyId(old)},${expectedOurs(old, event.id, ts, body)}`]);
    assert.ok(verifyOurSignature(headers['x-webook-signature'], fresh, event.id, ts, body));
    assert.ok(verifyOurSignature(headers['x-webook-signature'], old, event.id, ts, body));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), WebhookVerificationError);
  });

  it('refuse to sign without a secret', () => {
    assert.throws(() => signatureHeaders([], 'id', 1, 'x'), /no webhook secret/);
  });
});

describe('webhook request', () => {
  it('has the documented body (docs/webhooks.md), keys in order, data as stored', () => {
    const sentAt = Date.parse('2024-02-26T13:12:40.123Z');
    const body = buildBody(event, 2, sentAt);
    const parsed = JSON.parse(body);
    assert.deepEqual(Object.keys(parsed), ['event', 'event_id', 'app_uid', 'event_time', 'sent_at', 'attempt', 'data']);
    assert.deepEqual(parsed, {
      event: 'asset.minted',
      event_id: event.id,
      app_uid: event.appUid,
      event_time: event.eventTime,
      sent_at: '2024-02-26T13:12:40.123000Z',
      attempt: 2,
      data: JSON.parse(event.payload),
    });
    assert.ok(body.endsWith(`"data":${event.payload}}`));
  });

  it('has the documented headers (docs/webhooks.md)', () => {
    const t = Date.now();
    const { headers } = buildRequest(event, 7, t, [newWebhookSecret()]);
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['x-app-uid'], event.appUid);
    assert.equal(headers['x-webhook-correlation-id'], event.id);
    assert.equal(headers['x-webhook-attempt'], '7');
    assert.equal(headers['webhook-id'], event.id);
    assert.equal(headers['webhook-timestamp'], String(Math.floor(t / 1000)));
    assert.match(headers['x-webook-signature'], /^key-[0-9a-f]{8},signature-[0-9a-f]{64}$/);
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
  });
});
