// The console's custody pages: a user's wallet export (the management route) and the audit log.
import { z } from 'zod';
import { listAudit, verifyAudit } from '../../services/audit.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { adminCustodyRoutes } from '../admin/custody.js';
import { consoleActor, page, type ConsolePage } from './kit.js';

export const custodyPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  await adminCustodyRoutes(app, ctx, { actorOf: consoleActor, audit: false }); // POST /apps/:uid/users/:user/wallet-export

  app.get('/audit', { schema: { querystring: z.object({ ...page, action: str().max(64).optional() }) } }, async (req) => {
    const p = await listAudit(ctx, { action: req.query.action || undefined }, { cursor: req.query.cursor, limit: req.query.limit });
    return ok({ items: p.items, next_cursor: p.next });
  });

  // The audit chain checked from its first entry (what `mintworks audit verify` does).
  app.get('/audit/verify', async () => ok(await verifyAudit(ctx)));
};
