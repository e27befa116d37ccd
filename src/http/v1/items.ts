// /v1/item: stackable items of ERC-1155 collections (docs/api.md, Items): item types, mints of amounts to
// users, balances, gasless transfers and burns. Mirrors /v1/reward. Fastify's router prefers static
// segments, so /item/mint, /item/balance, /item/transfer and /item/burn win over /item/{uid}.
import { sendPage } from '../kit/paging.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import { ItemAmountError, parseItemAmount } from '../../domain/items.js';
import { editItemData, itemData, pageQuery, requiredStr, str } from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import {
  createItem,
  editItem,
  getItem,
  getItemAction,
  getItemBalance,
  getItemMint,
  listItemActions,
  listItemBalances,
  listItemMintsOfUser,
  listItems,
  mintItem,
  startItemAction,
} from '../../services/items/index.js';

const uidText = str({ error: 'This field is required.' })
  .trim()
  .min(1, 'This field may not be blank.')
  .max(32, 'Ensure this field has no more than 32 characters.');

/** A whole amount as a JSON number or numeric string (checked here, parsed again by the handler). */
const itemAmount = z
  .union([z.number(), str()], { error: (iss) => (iss.input === undefined ? 'This field is required.' : 'Must be a number or a numeric string.') })
  .superRefine((v, c) => {
    try {
      parseItemAmount(v);
    } catch (err) {
      if (!(err instanceof ItemAmountError)) throw err;
      c.addIssue({ code: 'custom', message: err.message });
    }
  })
  .describe('A positive whole number as a JSON number or a numeric string, e.g. 5 or "5" (at most 2^128 - 1).');

const createItemBody = z.object({
  collection_uid: uidText,
  item_external_id: str({ error: 'This field is required.' }).trim().min(1, 'This field may not be blank.').max(255),
  max_supply: itemAmount.nullish().describe('The most that may ever be minted of the item (burns make no room); none: unlimited.'),
  data: itemData,
});

const mintBody = z.object({
  item_uid: uidText,
  to_user_uid: uidText,
  amount: itemAmount,
  nonce: z
    .union([str().trim().min(1).max(255), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)], {
      error: (iss) => (iss.input === undefined ? 'This field is required.' : 'Must be a non-empty string (255 characters at most) or a non-negative integer.'),
    })
    .describe('Unique per item: a repeated nonce is refused and nothing is minted.'),
});

const transferBody = z.object({
  item_uid: uidText,
  from_user_uid: uidText,
  to_address: str({ error: 'This field is required.' }).max(64, 'Enter a valid address: 0x followed by 40 hexadecimal characters.'),
  amount: itemAmount,
});
const burnBody = z.object({ item_uid: uidText, from_user_uid: uidText, amount: itemAmount });

const balanceQuery = z.object({ item_uid: str().optional(), user_uid: requiredStr() });
const itemListQuery = z.object({ collection_uid: str().optional() });
const userListQuery = z.object({ user_uid: str().optional(), ...pageQuery });
const uidParam = z.object({ uid: str() });

const needUser = (user_uid: string | undefined): string => {
  if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
  return user_uid;
};

export async function itemRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['items'] };
  const exact = { exactNumbers: ['amount', 'max_supply'] };

  app.post('/item', { schema: { ...tags, body: createItemBody }, config: exact }, async (req, reply) => {
    const b = req.body;
    const maxSupply = b.max_supply == null ? null : parseItemAmount(b.max_supply);
    const r = await createItem(
      ctx,
      req.appUid,
      { collection_uid: b.collection_uid, item_external_id: b.item_external_id, max_supply: maxSupply, data: b.data },
      req.idempotency,
    );
    return reply.code(201).send(ok(r));
  });
  app.get('/item', { schema: { ...tags, querystring: itemListQuery } }, async (req) => {
    if (req.query.collection_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
    return ok(await listItems(ctx, req.appUid, req.query.collection_uid));
  });

  // Balances (404 for an unknown item; an unknown user holds 0).
  app.get('/item/balance', { schema: { ...tags, querystring: balanceQuery } }, async (req) => {
    const { item_uid, user_uid } = req.query;
    if (item_uid === undefined) return ok(await listItemBalances(ctx, req.appUid, user_uid));
    return ok(await getItemBalance(ctx, req.appUid, uidOr404(item_uid, 'Item'), user_uid));
  });

  // Mints
  app.post('/item/mint', { schema: { ...tags, body: mintBody }, config: exact }, async (req, reply) => {
    const b = req.body;
    const nonce = typeof b.nonce === 'string' ? b.nonce.trim() : b.nonce;
    const r = await mintItem(ctx, req.appUid, { item_uid: b.item_uid, to_user_uid: b.to_user_uid, amount: parseItemAmount(b.amount), nonce }, req.idempotency);
    return reply.code(201).send(ok(r));
  });
  app.get('/item/mint/:uid', { schema: { ...tags, params: uidParam } }, async (req) =>
    ok(await getItemMint(ctx, req.appUid, uidOr404(req.params.uid, 'Item mint'))),
  );
  app.get('/item/mint', { schema: { ...tags, querystring: userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listItemMintsOfUser(ctx, req.appUid, needUser(user_uid), page)));
  });

  // Transfers and burns
  app.post('/item/transfer', { schema: { ...tags, body: transferBody }, config: exact }, async (req, reply) => {
    const b = req.body;
    const r = await startItemAction(
      ctx,
      req.appUid,
      'transfer',
      { item_uid: b.item_uid, from_user_uid: b.from_user_uid, to_address: b.to_address, amount: parseItemAmount(b.amount) },
      req.idempotency,
    );
    return reply.code(201).send(ok(r));
  });
  app.post('/item/burn', { schema: { ...tags, body: burnBody }, config: exact }, async (req, reply) => {
    const b = req.body;
    const r = await startItemAction(
      ctx,
      req.appUid,
      'burn',
      { item_uid: b.item_uid, from_user_uid: b.from_user_uid, amount: parseItemAmount(b.amount) },
      req.idempotency,
    );
    return reply.code(201).send(ok(r));
  });
  for (const action of ['transfer', 'burn'] as const) {
    const resource = action === 'transfer' ? 'Item transfer' : 'Item burn';
    app.get(`/item/${action}/:uid`, { schema: { ...tags, params: uidParam } }, async (req) =>
      ok(await getItemAction(ctx, req.appUid, action, uidOr404(req.params.uid, resource))),
    );
    app.get(`/item/${action}`, { schema: { ...tags, querystring: userListQuery } }, async (req, reply) => {
      const { user_uid, ...page } = req.query;
      return ok(sendPage(req, reply, ctx.config.publicUrl, await listItemActions(ctx, req.appUid, action, needUser(user_uid), page)));
    });
  }

  // An item
  app.get('/item/:uid', { schema: { ...tags, params: uidParam } }, async (req) => ok(await getItem(ctx, req.appUid, uidOr404(req.params.uid, 'Item'))));
  app.put('/item/:uid', { schema: { ...tags, params: uidParam, body: z.object({ data: editItemData }) } }, async (req) =>
    ok(await editItem(ctx, req.appUid, uidOr404(req.params.uid, 'Item'), req.body.data, req.idempotency)),
  );
}
