// What /openapi.json says about each route beyond its request schema: a summary, a description, the
// answer of every status it gives (the success in the `{success, data}` envelope, each failure in the
// error envelope) with examples, and the security scheme (the App's key and token under /v1, the
// operator token under /admin/v1). The request schemas stay where the routes are (src/http/v1, src/http/admin);
// these are joined to them when each route is registered (the onRoute hook below), so the document
// and the routes cannot name different paths. test/integration/openapi.test.ts validates the document
// and checks real answers against these schemas.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { z } from 'zod';

// --------------------------------------------------------------------------------------- objects

const uid = z.string().describe('12-digit identifier').meta({ example: '482913570214' });
const time = z.string().describe('ISO 8601, UTC').meta({ example: '2025-06-01T12:00:00.000000Z' });
const address = z.string().describe('0x and 40 lower-case hex digits').meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' });
const chain = { chain: z.string().meta({ example: 'Anvil' }), network: z.string().meta({ example: 'Anvil' }), chain_id: z.number().int().meta({ example: 31337 }) };

const created = z.object({ uid }).describe('The new object\'s uid; read it with the matching GET.');

export const userObject = z
  .object({
    uid,
    created_at: time,
    email: z.string().nullable(),
    user_external_id: z.string().nullable(),
    wallets: z.array(z.object({ address, explorer_url: z.string(), network: z.string(), chain_id: z.number().int() })).describe('Empty until the wallet is created (first mint or GET /deposit).'),
  })
  .meta({ example: { uid: '482913570214', created_at: '2025-06-01T12:00:00.000000Z', email: 'player@example.com', user_external_id: null, wallets: [] } });

/** The management API's user: the public object and when its wallet key was last exported. */
const adminUserObject = userObject.extend({ wallet_exported_at: time.nullable().describe('When the wallet key was last exported to the user (null: never).') });

const walletExportObject = z
  .object({
    address,
    enc: z.string().describe('HPKE encapsulated key, base64url'),
    ciphertext: z.string().describe('The wallet key as 0x-hex text, sealed (AES-256-GCM), base64url'),
  })
  .meta({ example: { address: '0x8ba1f109551bd432803012645ac136ddd64dba72', enc: 'Zk9…', ciphertext: 'qT3…' } });

const auditObject = z.object({
  uid: z.string(),
  created_at: time,
  actor: z.enum(['operator_token', 'console', 'cli']),
  actor_detail: z.string().nullable().describe('Client address (operator token, console) or OS user (CLI).'),
  action: z.string().meta({ example: 'wallet.exported' }),
  app_uid: uid.nullable(),
  user_uid: uid.nullable(),
  chain_id: z.number().int().nullable(),
  details: z.record(z.string(), z.unknown()),
});

const collectionObject = z.object({
  uid,
  name: z.string(),
  created_at: time,
  status: z.enum(['deploying', 'deployed']),
  type: z.literal('ERC721'),
  editable_assets: z.boolean(),
  contract_address: address.nullable(),
  symbol: z.string(),
  description: z.string().nullable(),
  external_url: z.string().nullable(),
  explorer_url: z.string().nullable(),
  ...chain,
});

const assetObject = z
  .object({
    uid,
    name: z.string(),
    asset_external_id: z.string(),
    collection_uid: uid,
    collection_name: z.string(),
    created_at: time,
    token_id: z.number().int().nullable().describe('Fixed at creation; shown once minted.'),
    is_minted: z.boolean(),
    is_burned: z.boolean(),
    is_transferring: z.boolean(),
    is_transferable: z.boolean(),
    is_editing: z.boolean(),
    mint_for_user_uid: uid.nullable(),
    mint_for_address: address.nullable(),
    owner_user_uid: uid.nullable(),
    owner_address: address.nullable(),
    explorer_url: z.string().nullable(),
    token_uri: z.string().nullable(),
    sale_price_in_usd: z.number().nullable(),
    metadata: z.record(z.string(), z.unknown()).describe('The ERC-721 metadata document (name, image, attributes, …).'),
    mint_error: z.string().nullable().optional().describe('Only on an asset whose mint failed for good.'),
  })
  .meta({
    example: {
      uid: '730018264405', name: 'Sword', asset_external_id: 'sword-1', collection_uid: '159204837161', collection_name: 'Demo Collection', created_at: '2025-06-01T12:00:00.000000Z',
      token_id: 1, is_minted: true, is_burned: false, is_transferring: false, is_transferable: true, is_editing: false, mint_for_user_uid: '482913570214',
      mint_for_address: '0x8ba1f109551bd432803012645ac136ddd64dba72', owner_user_uid: '482913570214', owner_address: '0x8ba1f109551bd432803012645ac136ddd64dba72',
      explorer_url: 'http://127.0.0.1:8080/explorer/token/0x5fbdb2315678afecb367f032d93f642f64180aa3?a=1', token_uri: 'http://127.0.0.1:8080/metadata/159204837161/1',
      sale_price_in_usd: null, metadata: { name: 'Sword', image: 'https://example.com/sword.png', attributes: [{ trait_type: 'power', value: 9 }] },
    },
  });

const transferObject = z.object({ uid, asset_uid: uid, from_user_uid: uid, to_address: address, created_at: time, status: z.enum(['pending', 'done', 'cancelled']), reason: z.string().nullable().optional().describe('Only on a cancelled transfer.') });
const burnObject = z.object({ uid, asset_uid: uid, from_user_uid: uid, created_at: time, status: z.enum(['pending', 'done']) });
const depositObject = z
  .object({ network: z.string(), chain_id: z.number().int(), wallet_address: address, qr_code_data: z.string().describe('ERC-681: ethereum:<address>@<chain id>') })
  .meta({ example: { network: 'Anvil', chain_id: 31337, wallet_address: '0x8ba1f109551bd432803012645ac136ddd64dba72', qr_code_data: 'ethereum:0x8ba1f109551bd432803012645ac136ddd64dba72@31337' } });

const rewardFields = {
  uid,
  name: z.string(),
  status: z.enum(['deploying', 'deployed']),
  token_type: z.literal('ERC20'),
  token_name: z.string(),
  created_at: time,
  contract_address: address.nullable(),
  withdraw_receiver: address.nullable(),
  description: z.string().nullable(),
  explorer_url: z.string().nullable(),
  ...chain,
};
const rewardObject = z.object(rewardFields);
const rewardAdminObject = z.object({
  ...rewardFields,
  token_symbol: z.string(),
  supply: z.string().describe('Exact decimal text'),
  unallocated: z.string(),
  withdraw_status: z.string().nullable().describe('null, requested or done'),
  withdrawn_amount: z.string().nullable(),
  withdrawn_at: z.string().nullable(),
});
const allocationObject = z.object({
  uid,
  reward_uid: uid,
  to_user_uid: uid,
  amount: z.number(),
  nonce: z.union([z.string(), z.number()]).describe('As the client sent it'),
  created_at: time,
  status: z.enum(['pending', 'done', 'failed']),
  reason: z.string().optional().describe('Only on a failed allocation.'),
});
const claimObject = z.object({
  uid,
  reward_uid: uid,
  from_user_uid: uid,
  to_address: address,
  amount: z.number().describe('What was claimed: 0 until done'),
  created_at: time,
  status: z.enum(['pending', 'done', 'failed']),
  reason: z.string().optional().describe('Only on a failed claim.'),
});
const balanceObject = z.object({ reward_uid: uid, user_uid: z.string(), amount: z.number() }).meta({ example: { reward_uid: '621093847712', user_uid: '482913570214', amount: 12.5 } });

const appSummary = z.object({ uid, name: z.string(), environment: z.enum(['development', 'production']), created_at: time });
const newApp = z
  .object({ uid, api_key: z.string(), api_secret: z.string().describe('Shown once') })
  .meta({ example: { uid: '509265441174', api_key: 'mw_3kq9T2xV0b', api_secret: 'Zq8…(43 characters)' } });
const webhookObject = z.object({
  app_uid: uid,
  url: z.string(),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  events: z.array(z.string()).nullable().describe('null: every event'),
  key_id: z.string(),
  previous_key_id: z.string().nullable(),
  previous_key_valid_until: z.string().nullable(),
  created_at: time,
  updated_at: time,
  secret: z.string().optional().describe('whsec_…: only when created or rotated'),
});
const deliveryObject = z.object({
  event_id: z.string(),
  event: z.string(),
  event_time: time,
  status: z.enum(['pending', 'delivered', 'expired', 'disabled']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  delivered_at: z.string().nullable(),
  expires_at: time,
});
const attemptObject = z.object({
  event_id: z.string(),
  attempt: z.number().int(),
  time,
  url: z.string(),
  status_code: z.number().int().nullable(),
  latency_ms: z.number(),
  error: z.string().nullable(),
  response: z.string().nullable().describe('First 1 KiB of the answer'),
});

// ------------------------------------------------------------------------------------- envelopes

const ok = (data: z.ZodType) => z.object({ success: z.literal(true), data });

const errorDetail = z.object({ code: z.string(), field_name: z.string().optional(), message: z.string() });
export const errorEnvelope = z.object({
  success: z.literal(false),
  error: z.object({
    type: z.enum(['client_error', 'validation_error', 'server_error']),
    detail: z.union([errorDetail, z.array(errorDetail)]).describe('One detail, or one per field for a validation error; `message` is always the last key.'),
  }),
});

const failure = (description: string, code: string, message: string, type = 'client_error', field?: string) =>
  errorEnvelope.describe(description).meta({ example: { success: false, error: { type, detail: field ? { code, field_name: field, message } : { code, message } } } });

const ERRORS = {
  400: failure('Invalid request: a validation error names each field', 'required', 'This field is required.', 'validation_error', 'email'),
  401: failure('Missing or wrong credentials', 'unauthorized', 'Authentication credentials were not provided.'),
  404: failure('Unknown object (or path)', 'not_found', 'Not found.'),
  409: failure('The same Idempotency-Key is still being answered', 'idempotency_key_in_use', 'A request with this Idempotency-Key is in progress.'),
  415: failure('The body is not JSON', 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.'),
  422: failure('The Idempotency-Key was used with another request', 'idempotency_key_reused', 'This Idempotency-Key was used with a different request.'),
  429: failure('Over the rate limit (see x-ratelimit-* and retry-after)', 'rate_limited', 'Request was throttled.'),
} as const;
const ADMIN_401 = failure('Missing or wrong operator token', 'unauthorized', 'Operator token required (Authorization: Bearer <OPERATOR_TOKEN>).');

// ---------------------------------------------------------------------------------------- routes

interface RouteDoc {
  summary: string;
  description?: string;
  /** The success: status and data. */
  status?: 200 | 201;
  data: z.ZodType;
  /** Error statuses beyond the area's defaults (see responses()). */
  errors?: (keyof typeof ERRORS)[];
  /** A second success status (PUT webhook: 201 when created, 200 when changed). */
  alsoOk?: 200 | 201;
}

const list = (o: z.ZodType) => z.array(o);
const paged = ' A plain array, newest first, at most `limit` (1,000) entries; a `Link: <…>; rel="next"` header gives the next page.';

const DOCS: Record<string, RouteDoc> = {
  'POST /v1/user': { summary: 'Create a user', description: 'Both fields are optional and unique per App. The wallet is created at the first mint or GET /deposit.', status: 201, data: created },
  'GET /v1/user/:uid': { summary: 'Get a user', data: userObject },
  'GET /v1/user': { summary: 'Find a user by email or external id', description: 'Exactly one of `email` (case-insensitive) or `user_external_id` (alias `client_id`).', data: userObject },
  'GET /v1/collection/:uid': { summary: 'Get a collection', data: collectionObject },
  'POST /v1/asset': {
    summary: 'Create (mint) an asset',
    description: 'Fixes the token id and stores the metadata, answers 201; the mint follows within seconds (`is_minted`, event `asset.minted`).',
    status: 201,
    data: created,
  },
  'GET /v1/asset/:uid': { summary: 'Get an asset', data: assetObject },
  'GET /v1/asset': { summary: 'List a user\'s assets', description: `Query \`user_uid\`.${paged}`, data: list(assetObject) },
  'PUT /v1/asset/:uid': { summary: 'Replace an asset\'s metadata', description: 'Editable collections only; answers `data: null` at once, then emits ERC-4906 MetadataUpdate on chain and `asset.edited`.', data: z.null() },
  'POST /v1/transfer': { summary: 'Transfer an asset to an address', description: 'Signed by the owner\'s key and relayed (ERC-2771). A failed precondition answers 400 naming it.', status: 201, data: created },
  'GET /v1/transfer/:uid': { summary: 'Get a transfer', data: transferObject },
  'GET /v1/transfer': { summary: 'List a user\'s transfers', description: `Query \`user_uid\`.${paged}`, data: list(transferObject) },
  'POST /v1/burn': { summary: 'Burn an asset', status: 201, data: created },
  'GET /v1/burn/:uid': { summary: 'Get a burn', data: burnObject },
  'GET /v1/burn': { summary: 'List a user\'s burns', description: `Query \`user_uid\`.${paged}`, data: list(burnObject) },
  'GET /v1/deposit': { summary: 'Deposit address of a user', description: 'Creates the user\'s wallet if needed; `qr_code_data` is an ERC-681 URI.', data: depositObject },
  'GET /v1/reward/balance': { summary: 'A user\'s unclaimed reward balance', description: 'An unknown user has 0.', data: balanceObject },
  'POST /v1/reward/allocate': { summary: 'Allocate reward tokens to a user', description: '`amount` as a JSON number or numeric string (18 decimals at most); `nonce` unique per reward.', status: 201, data: created },
  'GET /v1/reward/allocate/:uid': { summary: 'Get an allocation', data: allocationObject },
  'GET /v1/reward/allocate': { summary: 'List a user\'s allocations', description: `Query \`user_uid\`.${paged}`, data: list(allocationObject) },
  'POST /v1/reward/allocation': { summary: 'Allocate reward tokens (alias of /reward/allocate)', status: 201, data: created },
  'GET /v1/reward/allocation/:uid': { summary: 'Get an allocation (alias)', data: allocationObject },
  'GET /v1/reward/allocation': { summary: 'List a user\'s allocations (alias)', description: `Query \`user_uid\`.${paged}`, data: list(allocationObject) },
  'POST /v1/reward/claim': { summary: 'Claim a user\'s whole balance to an address', description: 'Paid on chain, signed by the user\'s key; concurrent claims never pay more than the balance.', status: 201, data: created },
  'GET /v1/reward/claim/:uid': { summary: 'Get a claim', data: claimObject },
  'GET /v1/reward/claim': { summary: 'List a user\'s claims', description: `Query \`user_uid\`.${paged}`, data: list(claimObject) },
  'GET /v1/reward/:uid': { summary: 'Get a reward', data: rewardObject },

  'GET /admin/v1/apps': { summary: 'List Apps', data: list(appSummary) },
  'POST /admin/v1/apps': { summary: 'Create an App', description: 'The API secret is shown once.', status: 201, data: newApp },
  'GET /admin/v1/apps/:uid/collections': { summary: 'List an App\'s collections', data: list(collectionObject) },
  'POST /admin/v1/apps/:uid/collections': { summary: 'Create a collection', description: 'Deployed by the workers: `status` goes from deploying to deployed.', status: 201, data: created },
  'GET /admin/v1/apps/:uid/users': { summary: 'List an App\'s users', description: paged.trim(), data: list(adminUserObject) },
  'POST /admin/v1/apps/:uid/users/:user/wallet-export': {
    summary: 'Export a user\'s wallet key, sealed to their public key',
    description: 'HPKE (RFC 9180) base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info `mintworks wallet export v1`, no AAD. Marks the user, emits `user.wallet_exported`, and is in the audit log.',
    data: walletExportObject,
  },
  'GET /admin/v1/audit': { summary: 'The audit log of key and secret events', description: `Optional \`action\` and \`app_uid\`.${paged}`, data: list(auditObject) },
  'PUT /admin/v1/apps/:uid/webhook': { summary: 'Create or change the App\'s webhook', description: '201 when created, 200 when changed; `secret` only when created or rotated.', status: 200, alsoOk: 201, data: webhookObject },
  'GET /admin/v1/apps/:uid/webhook': { summary: 'The App\'s webhook configuration', data: webhookObject },
  'GET /admin/v1/apps/:uid/webhook/events': { summary: 'Delivery state per event, newest first', data: list(deliveryObject) },
  'GET /admin/v1/apps/:uid/webhook/events/:id/attempts': { summary: 'The attempt log of one event, newest first', data: list(attemptObject) },
  'POST /admin/v1/apps/:uid/webhook/events/:id/redeliver': { summary: 'Send an event again now', data: deliveryObject },
  'GET /admin/v1/apps/:uid/rewards': { summary: 'List an App\'s rewards', data: list(rewardAdminObject) },
  'POST /admin/v1/apps/:uid/rewards': { summary: 'Create a reward (ERC-20)', status: 201, data: created },
  'GET /admin/v1/apps/:uid/rewards/:reward': { summary: 'Get a reward with its budget', data: rewardAdminObject },
  'POST /admin/v1/apps/:uid/rewards/:reward/withdraw': { summary: 'Withdraw what the reward still holds', description: 'To its withdraw receiver, once pending allocations and claims are done.', data: rewardAdminObject },
};

/** The documented answers of a route: its success and the failures its area can give. */
function responses(method: string, url: string, doc: RouteDoc): Record<number, z.ZodType> {
  const r: Record<number, z.ZodType> = { [doc.status ?? 200]: ok(doc.data).describe(doc.summary) };
  if (doc.alsoOk) r[doc.alsoOk] = ok(doc.data).describe(doc.summary);
  if (url.startsWith('/admin/')) {
    r[400] = ERRORS[400];
    r[401] = ADMIN_401;
    r[404] = ERRORS[404];
  } else {
    for (const s of [400, 401, 404, 429] as const) r[s] = ERRORS[s];
    if (method === 'POST' || method === 'PUT') for (const s of [409, 415, 422] as const) r[s] = ERRORS[s];
  }
  for (const s of doc.errors ?? []) r[s] = ERRORS[s];
  return r;
}

/** The route docs of DOCS, keyed `METHOD /path` (exported for the test that checks them against answers). */
export const ROUTE_DOCS: Readonly<Record<string, RouteDoc>> = DOCS;

/**
 * Joins DOCS to the routes as they are registered: call before any route. Serialisation stays
 * JSON.stringify (the response schemas document; they never reshape an answer).
 */
export function documentRoutes(app: FastifyInstance<any, any, any, any, any>): void {
  app.setSerializerCompiler(() => (data: unknown) => JSON.stringify(data));
  app.addHook('onRoute', (route: RouteOptions) => {
    const method = Array.isArray(route.method) ? route.method[0] : route.method;
    const doc = DOCS[`${method} ${route.url}`];
    if (!doc) return;
    const admin = route.url.startsWith('/admin/');
    route.schema = {
      ...(route.schema ?? {}),
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      response: responses(method, route.url, doc),
      ...(admin ? { security: [{ operatorToken: [] }] } : {}),
    };
  });
}

/** The document's head: what the API is, how to authenticate, where the rest is explained. */
export const OPENAPI_INFO = {
  title: 'Mintworks API',
  version: '1.0.0',
  description:
    'Self-hosted asset minting: users with custodial wallets, ERC-721 assets, ERC-20 rewards, signed webhooks. ' +
    '`/v1`: every request carries `X-API-KEY` and `Authorization: Bearer <token>`, an HS256 JWT signed with the App\'s API secret ' +
    '(`mintworks token --app <uid>` makes one). `/admin/v1`: `Authorization: Bearer <OPERATOR_TOKEN>`. ' +
    'Successes answer `{"success": true, "data": …}`, failures `{"success": false, "error": {"type", "detail"}}`. ' +
    'Request, response and error examples, the token recipe and webhook verification: docs/api.md in the repository.',
};

export const SECURITY_SCHEMES = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'The App\'s API key' },
  bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'HS256 JWT signed with the App\'s API secret (claims are not checked beyond exp)' },
  operatorToken: { type: 'http', scheme: 'bearer', description: 'OPERATOR_TOKEN (or DATA_DIR/operator.token): the management API /admin/v1' },
} as const;
