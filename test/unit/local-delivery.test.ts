// Webhooks to the developer's machine (src/webhooks/local-delivery.ts): loopback for development Apps
// of a service only its machine reaches, nothing else lifted; the advice names the setting and where.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blockedAdvice, servesLoopbackOnly, webhookPolicy } from '../../src/webhooks/local-delivery.js';
import { assertAllowedUrl, OutboundBlockedError } from '../../src/net/outbound.js';

const laptop = { host: '127.0.0.1', publicUrl: 'http://127.0.0.1:8080', outboundAllowPrivate: false };

describe('webhooks to loopback', () => {
  it('a service listening on loopback with a loopback public URL serves only its machine', () => {
    for (const [host, publicUrl] of [
      ['127.0.0.1', 'http://127.0.0.1:8080'],
      ['::1', 'http://[::1]:8080'],
      ['localhost', 'http://localhost:8080'],
      ['127.0.0.1', 'http://localhost:3000/'],
    ])
      assert.equal(servesLoopbackOnly({ host, publicUrl }), true, `${host} ${publicUrl}`);
    for (const [host, publicUrl] of [
      ['0.0.0.0', 'http://127.0.0.1:8080'], // listens on every interface
      ['127.0.0.1', 'https://mint.example.com'], // behind a proxy: others reach it
      ['10.0.0.5', 'http://10.0.0.5:8080'],
      ['127.0.0.1', 'not a url'],
    ])
      assert.equal(servesLoopbackOnly({ host, publicUrl }), false, `${host} ${publicUrl}`);
  });

  it('loopback is lifted for development Apps on such a service only', () => {
    assert.deepEqual(webhookPolicy(laptop, 'development'), { allowPrivate: false, allowLoopback: true });
    assert.deepEqual(webhookPolicy(laptop, 'production'), { allowPrivate: false, allowLoopback: false });
    assert.deepEqual(webhookPolicy({ ...laptop, host: '0.0.0.0' }, 'development'), { allowPrivate: false, allowLoopback: false });
    assert.deepEqual(webhookPolicy({ ...laptop, outboundAllowPrivate: true }, 'production'), { allowPrivate: true, allowLoopback: false });
  });

  it('allowLoopback lifts loopback and nothing else', async () => {
    const policy = { allowPrivate: false, allowLoopback: true };
    for (const url of ['http://127.0.0.1:9000/hook', 'http://127.1.2.3/', 'http://[::1]:9000/', 'http://[::ffff:127.0.0.1]/'])
      await assert.doesNotReject(assertAllowedUrl(url, policy), url);
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data', 'http://192.168.1.1/', 'http://0.0.0.0/', 'http://[fe80::1]/'])
      await assert.rejects(assertAllowedUrl(url, policy), OutboundBlockedError, url);
    await assert.rejects(assertAllowedUrl('http://127.0.0.1/', { allowPrivate: false }), /loopback address 127\.0\.0\.1/);
  });

  it("the advice names OUTBOUND_ALLOW_PRIVATE, the service's environment, and why loopback is refused here", () => {
    const where = /OUTBOUND_ALLOW_PRIVATE=true in the service's environment \(not the CLI's\) and restart the service/;
    assert.match(blockedAdvice(laptop, 'production', 'loopback address 127.0.0.1'), /production Apps never deliver to this machine/);
    assert.match(blockedAdvice(laptop, 'production', 'loopback address 127.0.0.1'), where);
    const server = { ...laptop, host: '0.0.0.0' };
    assert.match(
      blockedAdvice(server, 'development', 'loopback address 127.0.0.1'),
      /listens on loopback alone \(HOST 0\.0\.0\.0, PUBLIC_URL http:\/\/127\.0\.0\.1:8080\)/,
    );
    assert.match(blockedAdvice(server, 'development', 'loopback address 127.0.0.1'), where);
    assert.match(blockedAdvice(laptop, 'development', 'private address 10.0.0.1'), where);
  });
});
