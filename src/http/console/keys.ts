// The console's keys page: the App's API key, a rotation of its secret, a bearer token for curl.
import { recordAudit } from '../../services/audit.js';
import { z } from 'zod';
import { getApiKey, rotateApiSecret, bearerToken } from '../../services/apps/api-keys.js';
import { ok } from '../kit/route-kit.js';
import { appFinder, appParam, consoleActor, type ConsolePage } from './kit.js';

export const keyPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  app.get('/apps/:uid/keys', { schema: { params: appParam } }, async (req) => ok(await getApiKey(ctx, await requireApp(req.params.uid))));

  app.post('/apps/:uid/keys/rotate', { schema: { params: appParam } }, async (req) =>
    ok(await rotateApiSecret(ctx, await requireApp(req.params.uid), consoleActor(req))),
  );

  app.post(
    '/apps/:uid/keys/token',
    {
      schema: {
        params: appParam,
        body: z.object({
          expires_in_seconds: z
            .number()
            .int()
            .min(60)
            .max(30 * 86400)
            .default(3600),
        }),
      },
    },
    async (req) => {
      const uid = await requireApp(req.params.uid);
      const r = await bearerToken(ctx, uid, req.body.expires_in_seconds);
      await recordAudit(ctx.db, consoleActor(req), { action: 'app.token_issued', app_uid: uid, details: { expires_in_seconds: req.body.expires_in_seconds } });
      return ok(r);
    },
  );
};
