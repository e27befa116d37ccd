// Webhooks to the developer's own machine. On a service as `npm start` ships it (HOST 127.0.0.1, no
// PUBLIC_URL), docs/webhooks.md's "Receiving webhooks on your laptop" block runs as written: a receiver
// on 127.0.0.1, the Demo App's webhook set by the CLI, an asset created with curl, and its
// asset.minted event arrives, with no setting. Elsewhere loopback stays refused, and the refusal
// names OUTBOUND_ALLOW_PRIVATE and where it is set: a production App on the same service; a development
// App of a service others can reach (a public PUBLIC_URL), whose URL the CLI accepted with the setting in
// its own environment only (every delivery blocked, the reason in the log the console shows).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { setWebhook } from '../../src/webhooks/index.js';
import { emitEvent } from '../../src/services/events.js';
import { createApp } from '../../src/services/apps/registry.js';
import { deliveryLog } from '../../src/services/console/queries.js';
import { freePort, tempDir, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe("receiving webhooks on the developer's machine", () => {
  describe('a service as `npm start` ships it', () => {
    // The reader's clone: data/ of the running service, and bin/ (a link to this repository's).
    const cwd = tempDir();
    const dataDir = path.join(cwd, 'data');
    let svc: Service;
    before(async () => {
      fs.symlinkSync(path.join(root, 'bin'), path.join(cwd, 'bin'));
      svc = await startService(loadConfig({ PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    });
    after(() => svc?.stop());

    it("docs/webhooks.md's section runs as written: the event reaches 127.0.0.1", async () => {
      const doc = fs.readFileSync(path.join(root, 'docs/webhooks.md'), 'utf8');
      const section = doc.slice(doc.indexOf('## Receiving webhooks on your laptop'));
      const script = /```sh\n([\s\S]*?)```/.exec(section)![1];
      const { stdout, stderr } = await run('bash', ['-euo', 'pipefail', '-c', script], {
        cwd,
        timeout: 120_000,
        env: { ...process.env, HOOK_PORT: String(await freePort()) },
      });
      assert.equal(stderr, '', 'nothing on stderr');
      assert.match(stdout, new RegExp(`^asset\\.minted ${UUID.source}$`, 'm'), stdout);
      assert.match(stdout, /delivered/, 'the log shows the delivery');
      assert.doesNotMatch(stdout, /blocked/);
    });

    it('a production App of the same service is refused loopback, and told which setting, set where', async () => {
      const { uid } = await createApp(svc.ctx, 'Live', 'production');
      await assert.rejects(setWebhook(svc.ctx, uid, { url: 'http://127.0.0.1:9/hook' }), (err: Error & { details?: { message: string }[] }) => {
        const message = JSON.stringify(err);
        assert.match(message, /loopback address 127\.0\.0\.1/);
        assert.match(message, /production Apps never deliver to this machine/);
        assert.match(message, /OUTBOUND_ALLOW_PRIVATE=true in the service's environment \(not the CLI's\)/);
        return true;
      });
    });
  });

  describe('a service others can reach (a public PUBLIC_URL)', () => {
    let t: TestService;
    before(async () => {
      t = await startTestService('sqlite', { PUBLIC_URL: 'https://mint.example.com' });
    });
    after(() => t?.stop());

    it("a development App's URL accepted by a CLI with the setting is blocked by the service, and the log says why", async () => {
      const received: string[] = [];
      const receiver = http.createServer((req, res) => {
        received.push(req.url ?? '');
        res.writeHead(204).end();
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
      try {
        const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
        const app = await t.newApp('development');
        // The service refuses it when asked...
        await assert.rejects(setWebhook(t.svc.ctx, app.uid, { url }), (err: Error) => {
          assert.match(
            JSON.stringify(err),
            /listens on loopback alone \(HOST 127\.0\.0\.1, PUBLIC_URL https:\/\/mint\.example\.com\).*OUTBOUND_ALLOW_PRIVATE=true in the service's environment/,
          );
          return true;
        });
        // ...the CLI, run with OUTBOUND_ALLOW_PRIVATE=true in its own environment, accepts it.
        await setWebhook({ ...t.svc.ctx, config: { ...t.svc.ctx.config, outboundAllowPrivate: true } }, app.uid, { url });
        const event = await emitEvent(t.svc.ctx.db, app.uid, 'user.wallet_created', { user: { uid: '100000000001' } });
        // The delivery log as the console's Webhook page reads it.
        const errorOf = async () => (await deliveryLog(t.svc.ctx, app.uid, { limit: 10, eventId: event })).items[0]?.last_error ?? null;
        await waitFor('the attempt logged', async () => (await errorOf()) !== null, 30_000, 100);
        const error = (await errorOf())!;
        assert.match(error, /^blocked: loopback address 127\.0\.0\.1: /);
        assert.match(error, /OUTBOUND_ALLOW_PRIVATE=true in the service's environment \(not the CLI's\) and restart the service/);
        assert.deepEqual(received, [], 'nothing reached the receiver');
      } finally {
        receiver.close();
      }
    });
  });
});
