// /v1/deposit: the address a user receives tokens of a collection at (the wallet is created on first ask).
import type { Ctx } from '../../services/context.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { depositInfo } from '../../services/users/wallets.js';
import { depositObject } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

export async function depositRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['deposits'] };

  app.get('/deposit', { schema: { ...tags, querystring: s.depositQuery } }, async (req) => {
    const { user_uid, collection_uid } = req.query;
    // Without a collection (absent or empty): the App's default chain, as the hosted service does.
    return ok(await depositInfo(ctx, req.appUid, uidOr404(user_uid, 'User'), collection_uid ? uidOr404(collection_uid, 'Collection') : null));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const depositDocs = {
  'GET /deposit': {
    operationId: 'getDeposit',
    summary: 'Deposit address of a user',
    description: "Creates the user's wallet if needed; `qr_code_data` is an ERC-681 URI.",
    data: depositObject,
  },
} satisfies RouteDocs;
