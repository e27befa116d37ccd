// The objects of the API as /openapi.json names them (docs/api.md, Objects): zod schemas with examples,
// shared by the routes that answer them. Each route module declares its own answers (their docs) with
// these; src/http/kit/openapi.ts joins the docs to the routes and puts the named objects (`.meta({ id })`)
// under components.schemas.
import { z } from 'zod';

/** A list of `o`, as a list route answers it. */
export const list = (o: z.ZodType) => z.array(o);
/** What a paged list's description ends with. */
export const paged = ' A plain array, newest first, at most `limit` (1,000) entries; a `Link: <…>; rel="next"` header gives the next page.';

export const uid = z.string().describe('12-digit identifier').meta({ example: '482913570214' });
export const time = z.string().describe('ISO 8601, UTC').meta({ example: '2025-06-01T12:00:00.000000Z' });
export const address = z.string().describe('0x and 40 lower-case hex digits').meta({ example: '0x5fbdb2315678afecb367f032d93f642f64180aa3' });
export const chain = {
  chain: z.string().meta({ example: 'Anvil' }),
  network: z.string().meta({ example: 'Anvil' }),
  chain_id: z.number().int().meta({ example: 31337 }),
};

export const created = z.object({ uid }).describe("The new object's uid; read it with the matching GET.").meta({ id: 'Created' });

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
export const adminUserObject = userObject
  .extend({ wallet_exported_at: time.nullable().describe('When the wallet key was last exported to the user (null: never).') })
  .meta({ id: 'AdminUser' });

export const walletExportObject = z
  .object({
    address,
    enc: z.string().describe('HPKE encapsulated key, base64url'),
    ciphertext: z.string().describe('The wallet key as 0x-hex text, sealed (AES-256-GCM), base64url'),
  })
  .meta({ id: 'WalletExport', example: { address: '0x8ba1f109551bd432803012645ac136ddd64dba72', enc: 'Zk9…', ciphertext: 'qT3…' } });

export const auditObject = z
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

export const auditCheckObject = z
  .object({
    ok: z.boolean(),
    entries: z.number().int().describe('Entries checked (before the first broken link, if any)'),
    head: z.object({ seq: z.number().int(), hash: z.string() }).describe('The last entry: keep a copy elsewhere to compare later'),
    broken: z.object({ seq: z.number().int(), uid: z.string().nullable(), reason: z.string() }).nullable().describe('The first link that does not hold'),
    checked_at: time,
  })
  .meta({ id: 'AuditCheck' });

export const collectionObject = z
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
export const adminCollectionObject = collectionObject
  .extend({ image_url: z.string().nullable().describe("The image of the collection's contract document") })
  .meta({ id: 'AdminCollection' });

export const assetObject = z
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

export const transferObject = z
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
export const burnObject = z.object({ uid, asset_uid: uid, from_user_uid: uid, created_at: time, status: z.enum(['pending', 'done']) }).meta({ id: 'Burn' });
export const depositObject = z
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
export const rewardObject = z.object(rewardFields).meta({ id: 'Reward' });
export const rewardAdminObject = z
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
export const allocationObject = z
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
export const claimObject = z
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
export const balanceObject = z
  .object({ reward_uid: uid, user_uid: z.string(), amount: z.number() })
  .meta({ id: 'RewardBalance', example: { reward_uid: '621093847712', user_uid: '482913570214', amount: 12.5 } });

export const appSummary = z.object({ uid, name: z.string(), environment: z.enum(['development', 'production']), created_at: time }).meta({ id: 'App' });
export const newApp = z
  .object({ uid, api_key: z.string(), api_secret: z.string().describe('Shown once') })
  .meta({ id: 'AppCredentials', example: { uid: '509265441174', api_key: 'mw_3kq9T2xV0b', api_secret: 'Zq8…(43 characters)' } });
export const webhookObject = z
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
export const deliveryObject = z
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
export const attemptObject = z
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
export const chainOverviewObject = z
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
export const chainTxObject = z
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
export const cancelObject = z
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
export const resyncObject = z
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
export const verifyObject = z
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
