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
import { address, created, list, paged, time, uid } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';
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

/** Checks a whole amount the schema let through (the handler parses it again); null passes (none given). */
const checkAmount = (v: number | string | null | undefined, c: z.RefinementCtx): void => {
  if (v == null) return;
  try {
    parseItemAmount(v);
  } catch (err) {
    if (!(err instanceof ItemAmountError)) throw err;
    c.addIssue({ code: 'custom', message: err.message });
  }
};
const amountError = (iss: { input: unknown }) => (iss.input === undefined ? 'This field is required.' : 'Must be a number or a numeric string.');
// Documented as an integer; a fraction is still let through to parseItemAmount, whose message names it.
const wholeNumber = () => z.number().meta({ type: 'integer' });

/** A whole amount as a JSON number or numeric string (checked here, parsed again by the handler). */
const itemAmount = z
  .union([wholeNumber(), str()], { error: amountError })
  .superRefine(checkAmount)
  .describe('A positive whole number as a JSON number or a numeric string, e.g. 5 or "5" (at most 2^128 - 1).');

// OpenAPI 3.0 reads `nullable` only beside a `type`, so each branch carries its own (a union marked
// nullable as a whole would document no type at all).
const maxSupply = z
  .union([wholeNumber().nullable(), str().nullable()], { error: amountError })
  .optional()
  .superRefine(checkAmount)
  .describe('The most that may ever be minted of the item (burns make no room); null or none: unlimited.');

const createItemBody = z.object({
  collection_uid: uidText,
  item_external_id: str({ error: 'This field is required.' }).trim().min(1, 'This field may not be blank.').max(255),
  max_supply: maxSupply,
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
  if (user_uid === undefined) throw ApiError.of('not_found');
  return user_uid;
};

// Long: one table of routes, a short entry each.
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
    if (req.query.collection_uid === undefined) throw ApiError.of('not_found');
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
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listItemMintsOfUser(ctx, req.appUid, needUser(user_uid), page)));
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
      return ok(sendPage(req, reply, ctx.installation.publicUrl, await listItemActions(ctx, req.appUid, action, needUser(user_uid), page)));
    });
  }

  // An item
  app.get('/item/:uid', { schema: { ...tags, params: uidParam } }, async (req) => ok(await getItem(ctx, req.appUid, uidOr404(req.params.uid, 'Item'))));
  app.put('/item/:uid', { schema: { ...tags, params: uidParam, body: z.object({ data: editItemData }) } }, async (req) =>
    ok(await editItem(ctx, req.appUid, uidOr404(req.params.uid, 'Item'), req.body.data, req.idempotency)),
  );
}

// ----------------------------------------------------------------------------------- the answers

const answeredAmount = z.union([z.number().int(), z.string()]).describe('A whole number: a JSON number up to 2^53 - 1, a string beyond.');
const itemObject = z
  .object({
    uid,
    collection_uid: uid,
    item_external_id: z.string(),
    token_id: z.number().int().describe('Fixed at creation; nothing happens on chain until the first mint.'),
    name: z.string(),
    token_uri: z
      .string()
      .describe("What the contract's uri(id) answers: a production App's ipfs://<cid> once its document is stored (as an asset's), else the metadata route."),
    max_supply: z.union([z.number().int().nullable(), z.string()]).describe('A whole number (a string beyond 2^53 - 1); null: unlimited.'),
    minted_supply: answeredAmount.describe('What mints confirmed on chain (burns do not lower it).'),
    created_at: time,
    metadata: z.record(z.string(), z.unknown()).describe('The ERC-1155 metadata document (name, image, attributes, …).'),
  })
  .meta({
    id: 'Item',
    example: {
      uid: '880213465902',
      collection_uid: '159204837162',
      item_external_id: 'potion-heal',
      token_id: 1,
      name: 'Healing potion',
      token_uri: 'http://127.0.0.1:8080/metadata/159204837162/1',
      max_supply: 1000,
      minted_supply: 8,
      created_at: '2025-06-01T12:00:00.000000Z',
      metadata: { name: 'Healing potion', image: 'https://example.com/potion.png' },
    },
  });
const itemMintObject = z
  .object({
    uid,
    item_uid: uid,
    to_user_uid: uid,
    amount: answeredAmount,
    nonce: z.union([z.string(), z.number()]).describe('As the client sent it'),
    created_at: time,
    status: z.enum(['pending', 'done', 'failed']),
    reason: z.string().optional().describe('Only on a failed mint.'),
  })
  .meta({ id: 'ItemMint' });
const itemTransferObject = z
  .object({
    uid,
    item_uid: uid,
    from_user_uid: uid,
    to_address: address,
    amount: answeredAmount,
    created_at: time,
    status: z.enum(['pending', 'done', 'cancelled']),
    reason: z.string().nullable().optional().describe('Only on a cancelled transfer.'),
  })
  .meta({ id: 'ItemTransfer' });
const itemBurnObject = z
  .object({
    uid,
    item_uid: uid,
    from_user_uid: uid,
    amount: answeredAmount,
    created_at: time,
    status: z.enum(['pending', 'done', 'cancelled']),
    reason: z.string().nullable().optional().describe('Only on a cancelled burn.'),
  })
  .meta({ id: 'ItemBurn' });
const itemBalanceObject = z
  .object({ item_uid: uid, user_uid: z.string(), amount: answeredAmount })
  .meta({ id: 'ItemBalance', example: { item_uid: '880213465902', user_uid: '482913570214', amount: 3 } });

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const itemsDocs = {
  'POST /item': {
    operationId: 'createItem',
    summary: 'Create an item type in an ERC-1155 collection',
    description: 'Fixes the token id; nothing happens on chain until the first mint. `max_supply` (optional): the most ever minted.',
    status: 201,
    data: created,
  },
  'GET /item': {
    operationId: 'listItems',
    summary: "List a collection's items",
    description: 'Query `collection_uid`; in token id order.',
    data: list(itemObject),
  },
  'GET /item/:uid': { operationId: 'getItem', summary: 'Get an item', data: itemObject },
  'PUT /item/:uid': {
    operationId: 'updateItem',
    summary: "Replace an item's metadata",
    description: 'Collections created with editable assets only.',
    data: z.null(),
  },
  'POST /item/mint': {
    operationId: 'mintItem',
    summary: 'Mint an amount of an item to a user',
    description: '`amount` a whole number (number or numeric string); `nonce` unique per item. Refused past the max supply (`max_supply_exceeded`).',
    status: 201,
    data: created,
  },
  'GET /item/mint/:uid': { operationId: 'getItemMint', summary: 'Get an item mint', data: itemMintObject },
  'GET /item/mint': {
    operationId: 'listItemMints',
    summary: "List a user's item mints",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemMintObject),
  },
  'GET /item/balance': {
    operationId: 'getItemBalance',
    summary: "A user's balance of an item, or of every item",
    description: 'With `item_uid`: one Balance (an unknown user has 0); without: the items the user holds. As the chain holds them.',
    data: z.union([itemBalanceObject, list(itemBalanceObject)]),
  },
  'POST /item/transfer': {
    operationId: 'transferItem',
    summary: 'Transfer an amount of an item to an address',
    description: "Signed by the holder's key and relayed (ERC-2771). More than the user holds: 400 `insufficient_balance`.",
    status: 201,
    data: created,
  },
  'GET /item/transfer/:uid': { operationId: 'getItemTransfer', summary: 'Get an item transfer', data: itemTransferObject },
  'GET /item/transfer': {
    operationId: 'listItemTransfers',
    summary: "List a user's item transfers",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemTransferObject),
  },
  'POST /item/burn': { operationId: 'burnItem', summary: 'Burn an amount of an item', status: 201, data: created },
  'GET /item/burn/:uid': { operationId: 'getItemBurn', summary: 'Get an item burn', data: itemBurnObject },
  'GET /item/burn': {
    operationId: 'listItemBurns',
    summary: "List a user's item burns",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemBurnObject),
  },
} satisfies RouteDocs;
