// Management API of custody (docs/custody.md), under /admin/v1 behind the operator token:
//   POST /apps/:uid/users/:user/wallet-export  {chain_id?, recipient_public_key} -> {address, enc, ciphertext}
//   GET  /audit                                 ?limit&cursor&action&app_uid: the audit log, newest first
//   GET  /audit/verify                          the audit chain checked: {ok, entries, head, broken}
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { Ctx } from '../../services/context.js';
import { exportWallet } from '../../services/wallet-export.js';
import { listAudit, verifyAudit, type Actor } from '../../services/audit.js';
import { pageQuery, str } from '../kit/schemas.js';
import { sendPage } from '../kit/paging.js';
import { ok, requireApp, type App } from '../kit/route-kit.js';
import { auditCheckObject, auditObject, walletExportObject, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

/** The management API's actor: whoever holds the operator token, told apart by client address. */
export const operatorActor = (req: FastifyRequest): Actor => ({ kind: 'operator_token', detail: req.ip });

/** `audit: false` leaves GET /audit out (the console serves its own, in its page shape). */
export async function adminCustodyRoutes(app: App, ctx: Ctx, opts: { actorOf?: (req: FastifyRequest) => Actor; audit?: boolean } = {}): Promise<void> {
  const actorOf = opts.actorOf ?? operatorActor;
  const tags = { tags: ['admin', 'custody'] };

  app.post(
    '/apps/:uid/users/:user/wallet-export',
    {
      schema: {
        ...tags,
        params: z.object({ uid: str(), user: str() }),
        body: z.strictObject({
          chain_id: z
            .number()
            .int()
            .positive()
            .nullish()
            .describe("The chain of the wallet (default: the user's first wallet; the key is the same on every chain)."),
          recipient_public_key: str().min(1).max(100).describe('Raw X25519 public key, base64url (32 bytes).'),
        }),
      },
    },
    async (req) => {
      await requireApp(ctx, req.params.uid);
      return ok(await exportWallet(ctx, req.params.uid, req.params.user, req.body, actorOf(req)));
    },
  );

  if (opts.audit === false) return;
  app.get(
    '/audit',
    { schema: { ...tags, querystring: z.object({ ...pageQuery, action: str().max(64).optional(), app_uid: str().max(64).optional() }) } },
    async (req, reply) =>
      ok(sendPage(req, reply, ctx.installation.publicUrl, await listAudit(ctx, { action: req.query.action, app_uid: req.query.app_uid }, req.query))),
  );
  app.get('/audit/verify', { schema: tags }, async () => ok(await verifyAudit(ctx)));
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const custodyDocs = {
  'POST /apps/:uid/users/:user/wallet-export': {
    operationId: 'adminExportWallet',
    summary: "Export a user's wallet key, sealed to their public key",
    description:
      'HPKE (RFC 9180) base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info `mintworks wallet export v1`, no AAD. Marks the user, emits `user.wallet_exported`, and is in the audit log.',
    data: walletExportObject,
  },
  'GET /audit': {
    operationId: 'adminListAudit',
    summary: 'The audit log of operator acts',
    description: `Optional \`action\` and \`app_uid\`.${paged}`,
    data: list(auditObject),
  },
  'GET /audit/verify': {
    operationId: 'adminVerifyAudit',
    summary: "The audit log's hash chain checked from its first entry",
    description: 'As `mintworks audit verify`: every entry in its place, following the one before it, its content matching its hash.',
    data: auditCheckObject,
  },
} satisfies RouteDocs;
