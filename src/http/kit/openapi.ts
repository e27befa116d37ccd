// What /openapi.json says about each route beyond its request schema: a summary, a description, the
// answer of every status it gives (the success in the `{success, data}` envelope, each failure in the
// error envelope) with examples, and the security scheme (the App's key and token under /v1, the
// operator token under /admin/v1). The request schemas stay where the routes are (src/http/v1, src/http/admin);
// these are joined to them when each route is registered (the onRoute hook below), so the document
// and the routes cannot name different paths. test/integration/openapi.test.ts validates the document
// and checks real answers against these schemas.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { stringifyExact } from '../../domain/exact-json.js';

// --------------------------------------------------------------------------------------- objects

const uid = z.string().describe('12-digit identifier').meta({ example: '482913570214' });
const time = z.string().describe('ISO 8601, UTC').meta({ example: '2025-06-01T12:00:00.000000Z' });
const address = z.string().describe('0x and 40 lower-case hex digits').meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' });
const chain = {
  chain: z.string().meta({ example: 'Anvil' }),
  network: z.string().meta({ example: 'Anvil' }),
  chain_id: z.number().int().meta({ example: 31337 }),
};

const created = z.object({ uid }).describe("The new object's uid; read it with the matching GET.").meta({ id: 'Created' });

export const userObject = z
  .object({
    uid,
    created_at: time,
    email: z.string().nullable(),
    user_external_id: z.string().nullable(),
    wallets: z
      .array(z.object({ address, explorer_url: z.string(), network: z.string(), chain_id: z.number().int() }))
      .describe('Empty until the wallet is created (first mint or GET /deposit).'),
  })
  .meta({
    id: 'User',
    example: { uid: '482913570214', created_at: '2025-06-01T12:00:00.000000Z', email: 'player@example.com', user_external_id: null, wallets: [] },
  });

/** The management API's user: the public object and when its wallet key was last exported. */
const adminUserObject = userObject
  .extend({ wallet_exported_at: time.nullable().describe('When the wallet key was last exported to the user (null: never).') })
  .meta({ id: 'AdminUser' });

const walletExportObject = z
  .object({
    address,
    enc: z.string().describe('HPKE encapsulated key, base64url'),
    ciphertext: z.string().describe('The wallet key as 0x-hex text, sealed (AES-256-GCM), base64url'),
  })
  .meta({ id: 'WalletExport', example: { address: '0x8ba1f109551bd432803012645ac136ddd64dba72', enc: 'Zk9…', ciphertext: 'qT3…' } });

const auditObject = z
  .object({
    uid: z.string(),
    created_at: time,
    actor: z.enum(['operator_token', 'console', 'cli']),
    actor_detail: z.string().nullable().describe('Client address (operator token, console) or OS user (CLI).'),
    action: z.string().meta({ example: 'wallet.exported' }),
    app_uid: uid.nullable(),
    user_uid: uid.nullable(),
    chain_id: z.number().int().nullable(),
    details: z.record(z.string(), z.unknown()),
    seq: z.number().int().describe('The place of the entry in the hash chain, from 1'),
    hash: z.string().describe("sha-256 (hex) over the entry's content and the previous entry's hash"),
  })
  .meta({ id: 'AuditEntry' });

const auditCheckObject = z
  .object({
    ok: z.boolean(),
    entries: z.number().int().describe('Entries checked (before the first broken link, if any)'),
    head: z.object({ seq: z.number().int(), hash: z.string() }).describe('The last entry: keep a copy elsewhere to compare later'),
    broken: z.object({ seq: z.number().int(), uid: z.string().nullable(), reason: z.string() }).nullable().describe('The first link that does not hold'),
    checked_at: time,
  })
  .meta({ id: 'AuditCheck' });

const collectionObject = z
  .object({
    uid,
    name: z.string(),
    created_at: time,
    status: z.enum(['deploying', 'deployed']),
    type: z.enum(['ERC721', 'ERC1155']).describe('ERC721: unique assets (/asset); ERC1155: stackable items (/item).'),
    editable_assets: z.boolean(),
    contract_address: address.nullable(),
    symbol: z.string(),
    description: z.string().nullable(),
    external_url: z.string().nullable(),
    explorer_url: z.string().nullable(),
    ...chain,
    royalty_receiver: address.nullable().describe('ERC-2981 royalty receiver (null: no royalty)'),
    royalty_bps: z.number().int().nullable().describe('ERC-2981 royalty in basis points, 0-1000 (250 = 2.5 %)'),
    soulbound: z.boolean().describe('ERC-5192: tokens cannot be transferred (burns allowed); fixed at creation'),
    contract_uri: z.string().nullable().describe("ERC-7572 contractURI(): the collection's metadata document"),
  })
  .meta({ id: 'Collection' });

/** The management API's collection: the public object and the image of its contract document. */
const adminCollectionObject = collectionObject
  .extend({ image_url: z.string().nullable().describe("The image of the collection's contract document") })
  .meta({ id: 'AdminCollection' });

const batchAnswer = z
  .array(
    z.union([
      created,
      z.object({ error: z.object({ code: z.string().meta({ example: 'asset_external_id_exists' }), message: z.string() }) }).meta({ id: 'BatchItemError' }),
    ]),
  )
  .describe('One entry per item of the request, in order.')
  .meta({ id: 'AssetBatchResult' });

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
    id: 'Asset',
    example: {
      uid: '730018264405',
      name: 'Sword',
      asset_external_id: 'sword-1',
      collection_uid: '159204837161',
      collection_name: 'Demo Collection',
      created_at: '2025-06-01T12:00:00.000000Z',
      token_id: 1,
      is_minted: true,
      is_burned: false,
      is_transferring: false,
      is_transferable: true,
      is_editing: false,
      mint_for_user_uid: '482913570214',
      mint_for_address: '0x8ba1f109551bd432803012645ac136ddd64dba72',
      owner_user_uid: '482913570214',
      owner_address: '0x8ba1f109551bd432803012645ac136ddd64dba72',
      explorer_url: 'http://127.0.0.1:8080/explorer/token/0x5fbdb2315678afecb367f032d93f642f64180aa3?a=1',
      token_uri: 'http://127.0.0.1:8080/metadata/159204837161/1',
      sale_price_in_usd: null,
      metadata: { name: 'Sword', image: 'https://example.com/sword.png', attributes: [{ trait_type: 'power', value: 9 }] },
    },
  });

const transferObject = z
  .object({
    uid,
    asset_uid: uid,
    from_user_uid: uid,
    to_address: address,
    created_at: time,
    status: z.enum(['pending', 'done', 'cancelled']),
    reason: z.string().nullable().optional().describe('Only on a cancelled transfer.'),
  })
  .meta({ id: 'Transfer' });
const burnObject = z.object({ uid, asset_uid: uid, from_user_uid: uid, created_at: time, status: z.enum(['pending', 'done']) }).meta({ id: 'Burn' });
const depositObject = z
  .object({
    network: z.string(),
    chain_id: z.number().int(),
    wallet_address: address,
    qr_code_data: z.string().describe('ERC-681: ethereum:<address>@<chain id>'),
  })
  .meta({
    id: 'Deposit',
    example: {
      network: 'Anvil',
      chain_id: 31337,
      wallet_address: '0x8ba1f109551bd432803012645ac136ddd64dba72',
      qr_code_data: 'ethereum:0x8ba1f109551bd432803012645ac136ddd64dba72@31337',
    },
  });

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
const rewardObject = z.object(rewardFields).meta({ id: 'Reward' });
const rewardAdminObject = z
  .object({
    ...rewardFields,
    token_symbol: z.string(),
    supply: z.string().describe('Exact decimal text'),
    unallocated: z.string(),
    withdraw_status: z.string().nullable().describe('null, requested or done'),
    withdrawn_amount: z.string().nullable(),
    withdrawn_at: z.string().nullable(),
  })
  .meta({ id: 'RewardWithBudget' });
const allocationObject = z
  .object({
    uid,
    reward_uid: uid,
    to_user_uid: uid,
    amount: z.number(),
    nonce: z.union([z.string(), z.number()]).describe('As the client sent it'),
    created_at: time,
    status: z.enum(['pending', 'done', 'failed']),
    reason: z.string().optional().describe('Only on a failed allocation.'),
  })
  .meta({ id: 'Allocation' });
const claimObject = z
  .object({
    uid,
    reward_uid: uid,
    from_user_uid: uid,
    to_address: address,
    amount: z.number().describe('What was claimed: 0 until done'),
    created_at: time,
    status: z.enum(['pending', 'done', 'failed']),
    reason: z.string().optional().describe('Only on a failed claim.'),
  })
  .meta({ id: 'Claim' });
const balanceObject = z
  .object({ reward_uid: uid, user_uid: z.string(), amount: z.number() })
  .meta({ id: 'RewardBalance', example: { reward_uid: '621093847712', user_uid: '482913570214', amount: 12.5 } });

const itemAmount = z.union([z.number().int(), z.string()]).describe('A whole number: a JSON number up to 2^53 - 1, a string beyond.');
const itemObject = z
  .object({
    uid,
    collection_uid: uid,
    item_external_id: z.string(),
    token_id: z.number().int().describe('Fixed at creation; nothing happens on chain until the first mint.'),
    name: z.string(),
    token_uri: z.string(),
    max_supply: z.union([z.number().int().nullable(), z.string()]).describe('A whole number (a string beyond 2^53 - 1); null: unlimited.'),
    minted_supply: itemAmount.describe('What mints confirmed on chain (burns do not lower it).'),
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
    amount: itemAmount,
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
    amount: itemAmount,
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
    amount: itemAmount,
    created_at: time,
    status: z.enum(['pending', 'done', 'cancelled']),
    reason: z.string().nullable().optional().describe('Only on a cancelled burn.'),
  })
  .meta({ id: 'ItemBurn' });
const itemBalanceObject = z
  .object({ item_uid: uid, user_uid: z.string(), amount: itemAmount })
  .meta({ id: 'ItemBalance', example: { item_uid: '880213465902', user_uid: '482913570214', amount: 3 } });

const appSummary = z.object({ uid, name: z.string(), environment: z.enum(['development', 'production']), created_at: time }).meta({ id: 'App' });
const newApp = z
  .object({ uid, api_key: z.string(), api_secret: z.string().describe('Shown once') })
  .meta({ id: 'AppCredentials', example: { uid: '509265441174', api_key: 'mw_3kq9T2xV0b', api_secret: 'Zq8…(43 characters)' } });
const webhookObject = z
  .object({
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
  })
  .meta({ id: 'Webhook' });
const deliveryObject = z
  .object({
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
  })
  .meta({ id: 'WebhookDelivery' });
const attemptObject = z
  .object({
    event_id: z.string(),
    attempt: z.number().int(),
    time,
    url: z.string(),
    status_code: z.number().int().nullable(),
    latency_ms: z.number(),
    error: z.string().nullable(),
    response: z.string().nullable().describe('First 1 KiB of the answer'),
  })
  .meta({ id: 'WebhookAttempt' });

const providerObject = z.object({
  provider: z.string().describe("The URL's scheme, host and port (its path, which may hold an API key, is hidden)"),
  state: z.enum(['up', 'degraded', 'down', 'rate_limited']),
  calls: z.number().int(),
  errors: z.number().int(),
  latency_ms: z.number().nullable(),
  last_error: z.string().nullable(),
  since: z.string().nullable(),
  retry_at: z.string().optional().describe('While rate limited: not called before this time (its Retry-After)'),
});
const relayerObject = z.object({
  address,
  role: z.enum(['relayer', 'deployer']),
  state: z
    .enum(['active', 'pending', 'retiring', 'retired'])
    .optional()
    .describe('A relayer: active (takes new work), pending (brought in by a rotation), retiring (finishes what it sent), retired; absent for the deployer'),
  balance_wei: z.string().nullable(),
  low: z.boolean(),
  nonce: z.number().int().nullable().describe('Confirmed on chain'),
  pending_nonce: z.number().int().nullable().describe("Including the node's pool"),
  next_nonce: z.number().int().nullable().describe('The next nonce Mintworks signs with'),
  in_flight: z.number().int().describe('Recorded transactions not confirmed yet'),
});
const chainOverviewObject = z
  .object({
    chain_id: z.number().int(),
    name: z.string(),
    currency: z.string().describe('Symbol of the native currency: balances are in its wei'),
    embedded: z.boolean(),
    ready: z.boolean().nullable(),
    status: z.string().describe('ok, or what the chain waits for'),
    head: z.number().int().nullable(),
    base_fee_gwei: z.number().nullable(),
    max_fee_gwei: z.number().nullable().describe('The fee ceiling; null when none is configured'),
    low_balance_wei: z.string(),
    providers: z.array(providerObject),
    relayers: z.array(relayerObject),
    unconfirmed_transactions: z.number().int(),
    stuck_transactions: z.number().int(),
  })
  .meta({ id: 'ChainOverview' });
const chainTxObject = z
  .object({
    id: z.number().int(),
    chain_id: z.number().int(),
    kind: z.string().meta({ example: 'asset.mint' }),
    ref: z.string(),
    from: address,
    nonce: z.number().int(),
    hash: z.string(),
    status: z.enum(['signed', 'sent']),
    stuck: z.boolean(),
    replacements: z.number().int(),
    max_fee_gwei: z.number().nullable(),
    tip_gwei: z.number().nullable(),
    age_s: z.number().int(),
    created_at: z.string(),
    cancellable: z.boolean(),
    cancelling: z.boolean().describe('Cancelled by the operator; the cancellation is not mined yet'),
    awaiting: z
      .string()
      .nullable()
      .describe(
        'What its outcome waits for: a receipt the providers do not serve yet, or proof of which transaction holds its nonce; null when nothing is awaited',
      ),
  })
  .meta({ id: 'ChainTransaction' });
const cancelObject = z
  .object({
    tx: z.number().int(),
    chain_id: z.number().int(),
    kind: z.string(),
    from: address,
    nonce: z.number().int(),
    cancel_hash: z.string(),
    replaced_hash: z.string(),
    max_fee_gwei: z.number(),
    broadcast: z.string().describe('sent, or why the node did not take it now (it is sent again)'),
    outcome: z.string(),
  })
  .meta({ id: 'ChainCancel' });
const resyncObject = z
  .object({
    chain_id: z.number().int(),
    accounts: z.array(
      z.object({
        address,
        nonce: z.number().int(),
        pending_nonce: z.number().int(),
        next_nonce_before: z.number().int(),
        next_nonce: z.number().int(),
        resent: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'ChainResync' });
// A string, number, boolean or null (an address, an amount in tokens, a flag, a status…).
const side = z.unknown();
const recordCounts = z
  .record(z.string(), z.number().int())
  .describe('per record kind: collections, rewards, assets, transfers, burns, allocations, claims, reward_balances, items, item_balances');
const verifyObject = z
  .object({
    divergences: z.array(
      z
        .object({
          kind: z
            .string()
            .describe(
              'asset_owner, asset_burned, asset_not_on_chain, asset_minted, token_uri, transfer_status, burn_status, claim_amount, claim_status, allocation_status, reward_balance, contract_missing, contract_owner, operator_missing, forwarder_mismatch, reward_withdrawn, collection_royalty, contract_uri',
            ),
          app_uid: z.string(),
          record: z.object({ type: z.string(), uid: z.string() }),
          field: z.string(),
          recorded: side.describe('what the database says'),
          on_chain: side.describe('what the chain shows'),
          fixable: z.boolean().describe('fix=true sets the record to what the chain shows'),
          chain_id: z.number().int(),
          fixed: z
            .enum(['fixed', 'changed', 'not_fixable'])
            .optional()
            .describe('with fix=true: fixed; changed (the row changed meanwhile: verify again); not_fixable'),
        })
        .meta({ id: 'ChainDivergence' }),
    ),
    checked: recordCounts,
    in_flight: recordCounts.describe('pending or unfinal records, not judged'),
    unverified: recordCounts.describe('records whose chain facts could not be read (the node did not answer)'),
  })
  .meta({ id: 'ChainVerify' });

// ------------------------------------------------------------------------------------- envelopes

const ok = (data: z.ZodType) => z.object({ success: z.literal(true), data });

const errorDetail = z.object({ code: z.string(), field_name: z.string().optional(), message: z.string() }).meta({ id: 'ErrorDetail' });
export const errorEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({
      type: z.enum(['client_error', 'validation_error', 'server_error']),
      detail: z.union([errorDetail, z.array(errorDetail)]).describe('One detail, or one per field for a validation error; `message` is always the last key.'),
    }),
  })
  .meta({ id: 'Error' });

/** The examples of the failures, by their description: put beside the shared `Error` schema by namedSchemas. */
const failureExamples = new Map<string, unknown>();

/** A documented failure: its own description and example, the one `Error` schema (a `$ref` in the document). */
function failure(description: string, code: string, message: string, type = 'client_error', field?: string) {
  failureExamples.set(description, { success: false, error: { type, detail: field ? { code, field_name: field, message } : { code, message } } });
  return { description, content: { 'application/json': { schema: errorEnvelope } } };
}
type Failure = ReturnType<typeof failure>;

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
  /** Stable, camelCase: client generators name their methods after it. */
  operationId: string;
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
  'POST /v1/user': {
    operationId: 'createUser',
    summary: 'Create a user',
    description: 'Both fields are optional and unique per App. The wallet is created at the first mint or GET /deposit.',
    status: 201,
    data: created,
  },
  'GET /v1/user/:uid': { operationId: 'getUser', summary: 'Get a user', data: userObject },
  'GET /v1/user': {
    operationId: 'findUser',
    summary: 'Find a user by email or external id',
    description: 'Exactly one of `email` (case-insensitive) or `user_external_id` (alias `client_id`).',
    data: userObject,
  },
  'GET /v1/collection/:uid': { operationId: 'getCollection', summary: 'Get a collection', data: collectionObject },
  'POST /v1/asset': {
    operationId: 'createAsset',
    summary: 'Create (mint) an asset',
    description: 'Fixes the token id and stores the metadata, answers 201; the mint follows within seconds (`is_minted`, event `asset.minted`).',
    status: 201,
    data: created,
  },
  'POST /v1/asset/batch': {
    operationId: 'createAssetBatch',
    summary: 'Create (mint) up to 100 assets',
    description:
      '`{assets: [AssetParams, …]}` (1-100). Each item is checked and accepted on its own, as POST /asset would: the answer has one entry per item, in order, `{uid}` or `{error: {code, message}}`. The Idempotency-Key covers the whole batch. 400 only when the envelope is wrong.',
    status: 201,
    data: batchAnswer,
  },
  'GET /v1/asset/:uid': { operationId: 'getAsset', summary: 'Get an asset', data: assetObject },
  'GET /v1/asset': { operationId: 'listAssets', summary: "List a user's assets", description: `Query \`user_uid\`.${paged}`, data: list(assetObject) },
  'PUT /v1/asset/:uid': {
    operationId: 'updateAsset',
    summary: "Replace an asset's metadata",
    description: 'Editable collections only; answers `data: null` at once, then emits ERC-4906 MetadataUpdate on chain and `asset.edited`.',
    data: z.null(),
  },
  'POST /v1/transfer': {
    operationId: 'createTransfer',
    summary: 'Transfer an asset to an address',
    description: "Signed by the owner's key and relayed (ERC-2771). A failed precondition answers 400 naming it.",
    status: 201,
    data: created,
  },
  'GET /v1/transfer/:uid': { operationId: 'getTransfer', summary: 'Get a transfer', data: transferObject },
  'GET /v1/transfer': {
    operationId: 'listTransfers',
    summary: "List a user's transfers",
    description: `Query \`user_uid\`.${paged}`,
    data: list(transferObject),
  },
  'POST /v1/burn': { operationId: 'createBurn', summary: 'Burn an asset', status: 201, data: created },
  'GET /v1/burn/:uid': { operationId: 'getBurn', summary: 'Get a burn', data: burnObject },
  'GET /v1/burn': { operationId: 'listBurns', summary: "List a user's burns", description: `Query \`user_uid\`.${paged}`, data: list(burnObject) },
  'GET /v1/deposit': {
    operationId: 'getDeposit',
    summary: 'Deposit address of a user',
    description: "Creates the user's wallet if needed; `qr_code_data` is an ERC-681 URI.",
    data: depositObject,
  },
  'GET /v1/reward/balance': {
    operationId: 'getRewardBalance',
    summary: "A user's unclaimed reward balance",
    description: 'An unknown user has 0.',
    data: balanceObject,
  },
  'POST /v1/reward/allocate': {
    operationId: 'allocateReward',
    summary: 'Allocate reward tokens to a user',
    description: '`amount` as a JSON number or numeric string (18 decimals at most); `nonce` unique per reward.',
    status: 201,
    data: created,
  },
  'GET /v1/reward/allocate/:uid': { operationId: 'getAllocation', summary: 'Get an allocation', data: allocationObject },
  'GET /v1/reward/allocate': {
    operationId: 'listAllocations',
    summary: "List a user's allocations",
    description: `Query \`user_uid\`.${paged}`,
    data: list(allocationObject),
  },
  'POST /v1/reward/allocation': { operationId: 'createAllocation', summary: 'Allocate reward tokens (alias of /reward/allocate)', status: 201, data: created },
  'GET /v1/reward/allocation/:uid': { operationId: 'getAllocationByAlias', summary: 'Get an allocation (alias)', data: allocationObject },
  'GET /v1/reward/allocation': {
    operationId: 'listAllocationsByAlias',
    summary: "List a user's allocations (alias)",
    description: `Query \`user_uid\`.${paged}`,
    data: list(allocationObject),
  },
  'POST /v1/reward/claim': {
    operationId: 'claimReward',
    summary: "Claim a user's whole balance to an address",
    description: "Paid on chain, signed by the user's key; concurrent claims never pay more than the balance.",
    status: 201,
    data: created,
  },
  'GET /v1/reward/claim/:uid': { operationId: 'getClaim', summary: 'Get a claim', data: claimObject },
  'GET /v1/reward/claim': { operationId: 'listClaims', summary: "List a user's claims", description: `Query \`user_uid\`.${paged}`, data: list(claimObject) },
  'GET /v1/reward/:uid': { operationId: 'getReward', summary: 'Get a reward', data: rewardObject },

  'POST /v1/item': {
    operationId: 'createItem',
    summary: 'Create an item type in an ERC-1155 collection',
    description: 'Fixes the token id; nothing happens on chain until the first mint. `max_supply` (optional): the most ever minted.',
    status: 201,
    data: created,
  },
  'GET /v1/item': {
    operationId: 'listItems',
    summary: "List a collection's items",
    description: 'Query `collection_uid`; in token id order.',
    data: list(itemObject),
  },
  'GET /v1/item/:uid': { operationId: 'getItem', summary: 'Get an item', data: itemObject },
  'PUT /v1/item/:uid': {
    operationId: 'updateItem',
    summary: "Replace an item's metadata",
    description: 'Collections created with editable assets only.',
    data: z.null(),
  },
  'POST /v1/item/mint': {
    operationId: 'mintItem',
    summary: 'Mint an amount of an item to a user',
    description: '`amount` a whole number (number or numeric string); `nonce` unique per item. Refused past the max supply (`max_supply_exceeded`).',
    status: 201,
    data: created,
  },
  'GET /v1/item/mint/:uid': { operationId: 'getItemMint', summary: 'Get an item mint', data: itemMintObject },
  'GET /v1/item/mint': {
    operationId: 'listItemMints',
    summary: "List a user's item mints",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemMintObject),
  },
  'GET /v1/item/balance': {
    operationId: 'getItemBalance',
    summary: "A user's balance of an item, or of every item",
    description: 'With `item_uid`: one Balance (an unknown user has 0); without: the items the user holds. As the chain holds them.',
    data: z.union([itemBalanceObject, list(itemBalanceObject)]),
  },
  'POST /v1/item/transfer': {
    operationId: 'transferItem',
    summary: 'Transfer an amount of an item to an address',
    description: "Signed by the holder's key and relayed (ERC-2771). More than the user holds: 400 `insufficient_balance`.",
    status: 201,
    data: created,
  },
  'GET /v1/item/transfer/:uid': { operationId: 'getItemTransfer', summary: 'Get an item transfer', data: itemTransferObject },
  'GET /v1/item/transfer': {
    operationId: 'listItemTransfers',
    summary: "List a user's item transfers",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemTransferObject),
  },
  'POST /v1/item/burn': { operationId: 'burnItem', summary: 'Burn an amount of an item', status: 201, data: created },
  'GET /v1/item/burn/:uid': { operationId: 'getItemBurn', summary: 'Get an item burn', data: itemBurnObject },
  'GET /v1/item/burn': {
    operationId: 'listItemBurns',
    summary: "List a user's item burns",
    description: `Query \`user_uid\`.${paged}`,
    data: list(itemBurnObject),
  },

  'GET /admin/v1/apps': { operationId: 'adminListApps', summary: 'List Apps', data: list(appSummary) },
  'POST /admin/v1/apps': { operationId: 'adminCreateApp', summary: 'Create an App', description: 'The API secret is shown once.', status: 201, data: newApp },
  'GET /admin/v1/apps/:uid/collections': { operationId: 'adminListCollections', summary: "List an App's collections", data: list(adminCollectionObject) },
  'POST /admin/v1/apps/:uid/collections': {
    operationId: 'adminCreateCollection',
    summary: 'Create a collection',
    description:
      'Deployed by the workers: `status` goes from deploying to deployed. Options: `soulbound` (ERC-5192, fixed), `royalty_receiver` and `royalty_bps` (ERC-2981, set together), `description`, `image_url`, `external_url` (the ERC-7572 contract document).',
    status: 201,
    data: created,
  },
  'PATCH /admin/v1/apps/:uid/collections/:collection': {
    operationId: 'adminUpdateCollection',
    summary: "Change a collection's royalty or contract document",
    description:
      'Absent fields stay, null clears one. The new contract document is stored, then `setCollectionInfo` sets the royalty and `contractURI()` on chain (`ContractURIUpdated`). `soulbound` cannot be changed.',
    data: collectionObject,
  },
  'GET /admin/v1/apps/:uid/users': { operationId: 'adminListUsers', summary: "List an App's users", description: paged.trim(), data: list(adminUserObject) },
  'POST /admin/v1/apps/:uid/users/:user/wallet-export': {
    operationId: 'adminExportWallet',
    summary: "Export a user's wallet key, sealed to their public key",
    description:
      'HPKE (RFC 9180) base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, info `mintworks wallet export v1`, no AAD. Marks the user, emits `user.wallet_exported`, and is in the audit log.',
    data: walletExportObject,
  },
  'GET /admin/v1/audit': {
    operationId: 'adminListAudit',
    summary: 'The audit log of operator acts',
    description: `Optional \`action\` and \`app_uid\`.${paged}`,
    data: list(auditObject),
  },
  'GET /admin/v1/audit/verify': {
    operationId: 'adminVerifyAudit',
    summary: "The audit log's hash chain checked from its first entry",
    description: 'As `mintworks audit verify`: every entry in its place, following the one before it, its content matching its hash.',
    data: auditCheckObject,
  },
  'PUT /admin/v1/apps/:uid/webhook': {
    operationId: 'adminPutWebhook',
    summary: "Create or change the App's webhook",
    description: '201 when created, 200 when changed; `secret` only when created or rotated.',
    status: 200,
    alsoOk: 201,
    data: webhookObject,
  },
  'GET /admin/v1/apps/:uid/webhook': { operationId: 'adminGetWebhook', summary: "The App's webhook configuration", data: webhookObject },
  'GET /admin/v1/apps/:uid/webhook/events': {
    operationId: 'adminListWebhookEvents',
    summary: 'Delivery state per event, newest first',
    data: list(deliveryObject),
  },
  'GET /admin/v1/apps/:uid/webhook/events/:id/attempts': {
    operationId: 'adminListWebhookAttempts',
    summary: 'The attempt log of one event, newest first',
    data: list(attemptObject),
  },
  'POST /admin/v1/apps/:uid/webhook/events/:id/redeliver': {
    operationId: 'adminRedeliverWebhookEvent',
    summary: 'Send an event again now',
    data: deliveryObject,
  },
  'GET /admin/v1/apps/:uid/rewards': { operationId: 'adminListRewards', summary: "List an App's rewards", data: list(rewardAdminObject) },
  'POST /admin/v1/apps/:uid/rewards': { operationId: 'adminCreateReward', summary: 'Create a reward (ERC-20)', status: 201, data: created },
  'GET /admin/v1/apps/:uid/rewards/:reward': { operationId: 'adminGetReward', summary: 'Get a reward with its budget', data: rewardAdminObject },
  'POST /admin/v1/apps/:uid/rewards/:reward/withdraw': {
    operationId: 'adminWithdrawReward',
    summary: 'Withdraw what the reward still holds',
    description: 'To its withdraw receiver, once pending allocations and claims are done.',
    data: rewardAdminObject,
  },
  'GET /admin/v1/chains': {
    operationId: 'adminListChains',
    summary: 'Every chain: head, base fee and ceiling, providers, relayers',
    data: list(chainOverviewObject),
  },
  'GET /admin/v1/chains/:chain_id': {
    operationId: 'adminGetChain',
    summary: 'One chain: head, base fee and ceiling, providers, relayers',
    data: chainOverviewObject,
  },
  'GET /admin/v1/chains/:chain_id/transactions': {
    operationId: 'adminListChainTransactions',
    summary: 'Transactions not confirmed yet, oldest first',
    description: '`stuck=true`: only those unconfirmed for longer than CHAIN_STUCK_SECONDS.',
    data: list(chainTxObject),
  },
  'POST /admin/v1/chains/:chain_id/transactions/:id/cancel': {
    operationId: 'adminCancelChainTransaction',
    summary: 'Cancel a transaction that waits or is stuck',
    description:
      'A 0-value transfer from its account to itself at the same nonce, with higher fees, takes its place. If it is mined, the job fails as "cancelled by the operator"; if the original is mined first, the job is done. 409 for a settled transaction or a deployment.',
    data: cancelObject,
    errors: [409],
  },
  'POST /admin/v1/chains/:chain_id/resync': {
    operationId: 'adminResyncChain',
    summary: "Resync the relayers' nonces with the chain",
    description: "Next nonces raised to the chain's (never lowered); recorded transactions no node knows any more are sent again, byte for byte.",
    data: resyncObject,
  },
  'POST /admin/v1/chains/:chain_id/verify': {
    operationId: 'adminVerifyChain',
    summary: 'Verify every record of the chain against the chain',
    description:
      'Contracts (code, owner, operators, forwarder), each asset (owner, token URI, burned), transfers, burns, allocations, claims and reward balances, each divergence with both sides. `fix: true` sets each fixable record to what the chain shows (audited as `chain.divergence_fixed`, with the webhook events that were missed). `app_uid`: one App only.',
    data: verifyObject,
  },
};

/** The documented answers of a route: its success and the failures its area can give. */
function responses(method: string, url: string, doc: RouteDoc): Record<number, z.ZodType | Failure> {
  const r: Record<number, z.ZodType | Failure> = { [doc.status ?? 200]: ok(doc.data).describe(doc.summary) };
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
 * JSON.stringify (the response schemas document; they never reshape an answer), with amounts written
 * as their exact literals (domain/exact-json.ts).
 */
export function documentRoutes(app: FastifyInstance<any, any, any, any, any>): void {
  app.setSerializerCompiler(() => (data: unknown) => stringifyExact(data));
  app.setReplySerializer((data: unknown) => stringifyExact(data));
  app.addHook('onRoute', (route: RouteOptions) => {
    const method = Array.isArray(route.method) ? route.method[0] : route.method;
    const doc = DOCS[`${method} ${route.url}`];
    if (!doc) return;
    const admin = route.url.startsWith('/admin/');
    route.schema = {
      ...(route.schema ?? {}),
      operationId: doc.operationId,
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
    "`/v1`: every request carries `X-API-KEY` and `Authorization: Bearer <token>`, an HS256 JWT signed with the App's API secret " +
    '(`mintworks token --app <uid>` makes one). `/admin/v1`: `Authorization: Bearer <OPERATOR_TOKEN>`. ' +
    'Successes answer `{"success": true, "data": …}`, failures `{"success": false, "error": {"type", "detail"}}`. ' +
    'Request, response and error examples, the token recipe and webhook verification: docs/api.md in the repository.',
};

export const SECURITY_SCHEMES = {
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: "The App's API key" },
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "HS256 JWT signed with the App's API secret (claims are not checked beyond exp)",
  },
  operatorToken: { type: 'http', scheme: 'bearer', description: 'OPERATOR_TOKEN (or DATA_DIR/operator.token): the management API /admin/v1' },
} as const;

const withComponents = createJsonSchemaTransformObject({});

/**
 * The document with the named objects (`.meta({ id })` above) under `components.schemas`, which the
 * routes' answers reference, so generated clients get an `Asset` or `User` type to import. The
 * provider also registers an `…Input` twin of each for request bodies; the requests here are not named
 * objects, so the twins nothing references are left out.
 */
export const namedSchemas: typeof withComponents = (document) => {
  const doc = withComponents(document) as { components?: { schemas?: Record<string, unknown> } };
  const schemas = doc.components?.schemas;
  for (const ops of Object.values((doc as { paths?: Record<string, Record<string, { responses?: Record<string, any> }>> }).paths ?? {})) {
    for (const op of Object.values(ops)) {
      for (const answer of Object.values(op.responses ?? {})) {
        const example = failureExamples.get(answer?.description);
        if (example && answer.content?.['application/json']) answer.content['application/json'].example = example;
      }
    }
  }
  for (let dropped = true; schemas && dropped; ) {
    dropped = false;
    for (const name of Object.keys(schemas).filter((n) => n.endsWith('Input'))) {
      const { [name]: _self, ...others } = schemas;
      const text = JSON.stringify({ ...doc, components: { ...doc.components, schemas: others } });
      if (!text.includes(`"#/components/schemas/${name}"`)) dropped = delete schemas[name];
    }
  }
  return doc as ReturnType<typeof withComponents>;
};
