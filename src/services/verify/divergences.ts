// The verifier's rules: a record as the database has it beside the facts the chain shows, in, the list of
// divergences (both sides of each) out. Pure: verify.ts reads the rows and the chain, fix.ts applies the
// fix a divergence carries. The chain is authoritative for owners, burns and payments; what the
// service cannot set right by writing its own record (a contract without code, an operator missing,
// a token recorded minted that the chain never minted) is reported as not fixable.
//
// What a record means, as these rules read it (the services keep these meanings):
//   - an asset `minted` and not `is_burned` is a token that exists, owned by `owner_address`, whose
//     `tokenURI` is `token_uri`; `is_burned` means the token was burned (ownerOf reverts, and minting
//     its id again reverts with TokenBurned);
//   - the LATEST transfer of an asset (by creation) decides where its token went: `done` means the
//     token is at `to_address` (unless it moved since, which only the owner check sees), `cancelled`
//     that it stayed; `pending` is in flight while a job or an unfinal transaction carries it;
//   - the latest burn likewise: `done` means the token is gone;
//   - a claim `done` with `amount` means the chain's Claimed event carrying the claim's ref paid that
//     amount; `failed` means no transaction of the claim paid anything;
//   - an allocation `done` means the contract's usedRef(ref) is true; `failed` that it is false;
//   - per (reward, user), allocated_done − claimed is what the contract's allocated(wallet) reads
//     while nothing of that user and reward is in flight and the pool is not withdrawn.
import { formatUnits } from '../../domain/amounts.js';

export type RecordType = 'collection' | 'reward' | 'asset' | 'transfer' | 'burn' | 'allocation' | 'claim' | 'reward_balance';

export type DivergenceKind =
  | 'contract_missing'
  | 'contract_owner'
  | 'operator_missing'
  | 'forwarder_mismatch'
  | 'reward_withdrawn'
  | 'collection_royalty'
  | 'contract_uri'
  | 'asset_owner'
  | 'asset_burned'
  | 'asset_not_on_chain'
  | 'asset_minted'
  | 'token_uri'
  | 'transfer_status'
  | 'burn_status'
  | 'allocation_status'
  | 'claim_amount'
  | 'claim_status'
  | 'reward_balance';

export type Side = string | number | boolean | null;

/** One disagreement between a record and the chain, as reported (CLI --json, admin route, console). */
export interface Divergence {
  kind: DivergenceKind;
  app_uid: string;
  record: { type: RecordType; uid: string };
  field: string;
  recorded: Side;
  on_chain: Side;
  fixable: boolean;
}

/**
 * How to set the record to what the chain shows, with the exact values read (fix.ts applies it, guarded
 * by the value it read: a row changed meanwhile is left alone).
 */
export type FixPlan =
  | { do: 'asset_owner'; asset_uid: string; from: string | null; to: string }
  | { do: 'asset_burned'; asset_uid: string; burn_uid: string | null; burn_status: 'pending' | 'cancelled' | 'done' | null }
  | { do: 'asset_unburned'; asset_uid: string; owner: string; burn_uid: string | null }
  | { do: 'transfer_done'; transfer_uid: string; asset_uid: string; status_was: 'pending' | 'cancelled'; to: string }
  | { do: 'transfer_cancelled'; transfer_uid: string; asset_uid: string; owner_was: string | null; owner: string }
  | { do: 'token_uri'; asset_uid: string; from: string | null; to: string }
  | { do: 'claim'; claim_uid: string; status_was: 'done' | 'failed'; amount_was: string | null; paid: string };

/** A divergence with its fix, as the rules give it; `report` strips the plan. */
export type Found = Divergence & { plan?: FixPlan };

export const report = ({ plan: _plan, ...d }: Found): Divergence => d;

// ------------------------------------------------------------------------------------ contracts

export interface ContractCase {
  type: 'collection' | 'reward';
  uid: string;
  app_uid: string;
  address: string;
  /** Facts read from the chain; null where the read failed (nothing is concluded from a failure). */
  hasCode: boolean | null;
  owner: string | null;
  forwarder: string | null;
  /** isOperator of each active relayer (null: not read). */
  operators: { address: string; is: boolean | null }[];
  /** The installation's accounts on this chain (deployer and every relayer), lower case. */
  ourAccounts: ReadonlySet<string>;
  expectedForwarder: string;
  /** A relayer rotation is under way: operators change under it, so they are not judged now. */
  rotating: boolean;
  /** Rewards: the pool recorded withdrawn, and withdrawn() on chain. */
  withdrawn?: { recorded: boolean; onChain: boolean | null };
  /** Collections with options, none of whose changes is in flight: the royalty and contract URI recorded, and on chain. */
  info?: { recorded: CollectionInfoRecord; onChain: CollectionInfoFacts };
}

export interface CollectionInfoRecord {
  royalty_receiver: string | null;
  royalty_bps: number | null;
  contract_uri: string;
}

/** royaltyInfo(1, 10000) as receiver and basis points, and contractURI(); null where the read failed. */
export interface CollectionInfoFacts {
  royalty: { receiver: string; bps: number } | null;
  contractUri: string | null;
}

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/**
 * The royalty and contract URI of a collection against its record. Not fixable by writing the record:
 * the record is what the operator set, and sending it again (`collection update`) sets the chain right.
 */
function collectionInfoDivergences(base: Pick<Found, 'app_uid' | 'record'>, info: NonNullable<ContractCase['info']>): Found[] {
  const { recorded: r, onChain: c } = info;
  const out: Found[] = [];
  const receiver = (r.royalty_receiver ?? ZERO_ADDRESS).toLowerCase();
  const bps = r.royalty_bps ?? 0;
  if (c.royalty && c.royalty.receiver !== receiver)
    out.push({ ...base, kind: 'collection_royalty', field: 'royalty_receiver', recorded: receiver, on_chain: c.royalty.receiver, fixable: false });
  if (c.royalty && c.royalty.bps !== bps)
    out.push({ ...base, kind: 'collection_royalty', field: 'royalty_bps', recorded: bps, on_chain: c.royalty.bps, fixable: false });
  if (c.contractUri !== null && c.contractUri !== r.contract_uri)
    out.push({ ...base, kind: 'contract_uri', field: 'contract_uri', recorded: r.contract_uri, on_chain: c.contractUri, fixable: false });
  return out;
}

export function contractDivergences(c: ContractCase): Found[] {
  const base = { app_uid: c.app_uid, record: { type: c.type, uid: c.uid } } as const;
  if (c.hasCode === false) return [{ ...base, kind: 'contract_missing', field: 'contract_address', recorded: c.address, on_chain: null, fixable: false }];
  const out: Found[] = [];
  if (c.owner !== null && !c.ourAccounts.has(c.owner.toLowerCase()))
    out.push({ ...base, kind: 'contract_owner', field: 'owner', recorded: 'an account of this installation', on_chain: c.owner.toLowerCase(), fixable: false });
  if (c.forwarder !== null && c.forwarder.toLowerCase() !== c.expectedForwarder.toLowerCase())
    out.push({
      ...base,
      kind: 'forwarder_mismatch',
      field: 'trusted_forwarder',
      recorded: c.expectedForwarder.toLowerCase(),
      on_chain: c.forwarder.toLowerCase(),
      fixable: false,
    });
  if (!c.rotating)
    for (const o of c.operators)
      if (o.is === false)
        out.push({ ...base, kind: 'operator_missing', field: `operator ${o.address.toLowerCase()}`, recorded: true, on_chain: false, fixable: false });
  if (c.withdrawn && c.withdrawn.onChain !== null && c.withdrawn.onChain !== c.withdrawn.recorded)
    out.push({ ...base, kind: 'reward_withdrawn', field: 'withdraw_status', recorded: c.withdrawn.recorded, on_chain: c.withdrawn.onChain, fixable: false });
  if (c.info) out.push(...collectionInfoDivergences(base, c.info));
  return out;
}

// --------------------------------------------------------------------------------------- assets

/** What the chain shows of a token: owned (with its URI, null when that read failed), burned, never minted; null: unknown. */
export type TokenFacts = { state: 'owned'; owner: string; tokenUri: string | null } | { state: 'burned' } | { state: 'absent' } | null;

export interface AssetRecord {
  uid: string;
  app_uid: string;
  mint_status: 'pending' | 'minted' | 'failed';
  is_burned: boolean;
  is_editing: boolean;
  owner_address: string | null;
  token_uri: string | null;
}

export interface ActionRecord {
  uid: string;
  status: 'pending' | 'done' | 'cancelled';
  /** A job or an unfinal transaction still carries it: its outcome is not known yet. */
  inFlight: boolean;
}

export interface AssetCase {
  asset: AssetRecord;
  /** The asset's latest transfer, with the sender's wallet. */
  transfer: (ActionRecord & { to_address: string; from_wallet: string | null }) | null;
  burn: ActionRecord | null;
  token: TokenFacts;
}

export type AssetVerdict = { inFlight: true } | { inFlight: false; found: Found[] };

const same = (a: string | null, b: string | null) => (a ?? '').toLowerCase() === (b ?? '').toLowerCase();

export function assetDivergences(c: AssetCase): AssetVerdict {
  const { asset: a, transfer: tr, burn: b, token } = c;
  if (a.mint_status === 'pending' || a.is_editing) return { inFlight: true };
  if ((tr?.status === 'pending' && tr.inFlight) || (b?.status === 'pending' && b.inFlight)) return { inFlight: true };
  if (token === null) return { inFlight: false, found: [] }; // the chain did not answer: nothing concluded
  const base = { app_uid: a.app_uid, record: { type: 'asset' as const, uid: a.uid } };
  if (a.mint_status === 'failed') {
    // A mint given up whose token exists after all (a transaction judged failed that was mined).
    if (token.state !== 'owned') return { inFlight: false, found: [] };
    return { inFlight: false, found: [{ ...base, kind: 'asset_minted', field: 'mint_status', recorded: 'failed', on_chain: 'minted', fixable: false }] };
  }
  if (token.state === 'absent')
    return {
      inFlight: false,
      found: [{ ...base, kind: 'asset_not_on_chain', field: 'mint_status', recorded: 'minted', on_chain: 'not minted', fixable: false }],
    };
  if (token.state === 'burned') return { inFlight: false, found: burnedToken(a, b) };
  if (a.is_burned)
    // Recorded burned, yet the token is there: the record follows the chain (and a done burn is undone).
    return {
      inFlight: false,
      found: [
        {
          ...base,
          kind: 'asset_burned',
          field: 'is_burned',
          recorded: true,
          on_chain: false,
          fixable: true,
          plan: { do: 'asset_unburned', asset_uid: a.uid, owner: token.owner.toLowerCase(), burn_uid: b?.status === 'done' ? b.uid : null },
        },
      ],
    };
  const found = ownedToken(a, tr, token.owner.toLowerCase());
  if (token.tokenUri !== null && token.tokenUri !== a.token_uri)
    found.push({
      ...base,
      kind: 'token_uri',
      field: 'token_uri',
      recorded: a.token_uri,
      on_chain: token.tokenUri,
      fixable: true,
      plan: { do: 'token_uri', asset_uid: a.uid, from: a.token_uri, to: token.tokenUri },
    });
  return { inFlight: false, found };
}

/** The token is burned on chain: the record's burn (or the asset itself) must say so. */
function burnedToken(a: AssetRecord, b: ActionRecord | null): Found[] {
  if (a.is_burned) return [];
  if (b && b.status !== 'done')
    return [
      {
        app_uid: a.app_uid,
        record: { type: 'burn', uid: b.uid },
        kind: 'burn_status',
        field: 'status',
        recorded: b.status,
        on_chain: 'done',
        fixable: true,
        plan: { do: 'asset_burned', asset_uid: a.uid, burn_uid: b.uid, burn_status: b.status },
      },
    ];
  return [
    {
      app_uid: a.app_uid,
      record: { type: 'asset', uid: a.uid },
      kind: 'asset_burned',
      field: 'is_burned',
      recorded: false,
      on_chain: true,
      fixable: true,
      plan: { do: 'asset_burned', asset_uid: a.uid, burn_uid: b?.uid ?? null, burn_status: b?.status ?? null },
    },
  ];
}

/** The token exists, owned by `owner`: the latest transfer and the recorded owner must agree with it. */
function ownedToken(a: AssetRecord, tr: AssetCase['transfer'], owner: string): Found[] {
  if (tr && tr.status !== 'done' && same(owner, tr.to_address))
    // Executed on chain, recorded as not (or not yet, with nothing left to carry it).
    return [
      {
        app_uid: a.app_uid,
        record: { type: 'transfer', uid: tr.uid },
        kind: 'transfer_status',
        field: 'status',
        recorded: tr.status,
        on_chain: 'done',
        fixable: true,
        plan: { do: 'transfer_done', transfer_uid: tr.uid, asset_uid: a.uid, status_was: tr.status, to: owner },
      },
    ];
  if (
    tr &&
    tr.status === 'done' &&
    !same(owner, tr.to_address) &&
    tr.from_wallet !== null &&
    same(owner, tr.from_wallet) &&
    same(a.owner_address, tr.to_address)
  )
    // Recorded done, yet the token never left the sender.
    return [
      {
        app_uid: a.app_uid,
        record: { type: 'transfer', uid: tr.uid },
        kind: 'transfer_status',
        field: 'status',
        recorded: 'done',
        on_chain: 'not executed',
        fixable: true,
        plan: { do: 'transfer_cancelled', transfer_uid: tr.uid, asset_uid: a.uid, owner_was: a.owner_address, owner },
      },
    ];
  if (same(a.owner_address, owner)) return [];
  return [
    {
      app_uid: a.app_uid,
      record: { type: 'asset', uid: a.uid },
      kind: 'asset_owner',
      field: 'owner_address',
      recorded: a.owner_address?.toLowerCase() ?? null,
      on_chain: owner,
      fixable: true,
      plan: { do: 'asset_owner', asset_uid: a.uid, from: a.owner_address, to: owner },
    },
  ];
}

// -------------------------------------------------------------------------------------- rewards

export interface ClaimCase {
  uid: string;
  app_uid: string;
  status: 'pending' | 'done' | 'failed';
  /** Base units, decimal text; null until done. */
  amount: string | null;
  /** What the Claimed events carrying the claim's ref paid (base units); null: no such event in the receipts found. */
  paid: bigint | null;
  /** Receipts were found for the claim's transactions (so an absent event is evidence, not a lookup that failed). */
  receiptsFound: boolean;
}

export type ClaimVerdict = { inFlight: true } | { inFlight: false; unverified: boolean; found: Found[] };

export function claimDivergences(c: ClaimCase): ClaimVerdict {
  if (c.status === 'pending') return { inFlight: true };
  const base = { app_uid: c.app_uid, record: { type: 'claim' as const, uid: c.uid } };
  const recorded = c.amount === null ? 0n : BigInt(c.amount);
  if (c.paid !== null) {
    const plan: FixPlan = { do: 'claim', claim_uid: c.uid, status_was: c.status, amount_was: c.amount, paid: c.paid.toString() };
    if (c.status === 'failed')
      return {
        inFlight: false,
        unverified: false,
        found: [{ ...base, kind: 'claim_status', field: 'status', recorded: 'failed', on_chain: 'done', fixable: true, plan }],
      };
    if (c.paid !== recorded)
      return {
        inFlight: false,
        unverified: false,
        found: [{ ...base, kind: 'claim_amount', field: 'amount', recorded: formatUnits(recorded), on_chain: formatUnits(c.paid), fixable: true, plan }],
      };
    return { inFlight: false, unverified: false, found: [] };
  }
  // No Claimed event with the claim's ref in what was found.
  if (c.status === 'done' && recorded > 0n) {
    if (!c.receiptsFound) return { inFlight: false, unverified: true, found: [] };
    return {
      inFlight: false,
      unverified: false,
      found: [{ ...base, kind: 'claim_amount', field: 'amount', recorded: formatUnits(recorded), on_chain: formatUnits(0n), fixable: false }],
    };
  }
  return { inFlight: false, unverified: false, found: [] };
}

export interface AllocationCase {
  uid: string;
  app_uid: string;
  status: 'pending' | 'done' | 'failed';
  /** usedRef(ref) on chain; null: not read. */
  used: boolean | null;
}

export type AllocationVerdict = { inFlight: true } | { inFlight: false; found: Found[] };

export function allocationDivergences(c: AllocationCase): AllocationVerdict {
  if (c.status === 'pending') return { inFlight: true };
  if (c.used === null || c.used === (c.status === 'done')) return { inFlight: false, found: [] };
  return {
    inFlight: false,
    found: [
      {
        app_uid: c.app_uid,
        record: { type: 'allocation', uid: c.uid },
        kind: 'allocation_status',
        field: 'status',
        recorded: c.status,
        on_chain: c.used ? 'allocated' : 'not allocated',
        fixable: false,
      },
    ],
  };
}

export interface BalanceCase {
  reward_uid: string;
  user_uid: string;
  app_uid: string;
  allocatedDone: bigint;
  claimed: bigint;
  /** allocated(wallet) on chain; null: not read (or no wallet). */
  onChain: bigint | null;
  /** An allocation or claim of this user and reward is still pending. */
  busy: boolean;
  withdrawn: boolean;
}

export type BalanceVerdict = { inFlight: true } | { inFlight: false; found: Found[] };

export function balanceDivergences(c: BalanceCase): BalanceVerdict {
  if (c.busy) return { inFlight: true };
  if (c.withdrawn || c.onChain === null) return { inFlight: false, found: [] };
  const ledger = c.allocatedDone - c.claimed;
  if (ledger === c.onChain) return { inFlight: false, found: [] };
  return {
    inFlight: false,
    found: [
      {
        app_uid: c.app_uid,
        record: { type: 'reward_balance', uid: `${c.reward_uid}:${c.user_uid}` },
        kind: 'reward_balance',
        field: 'allocated_done - claimed',
        recorded: formatUnits(ledger),
        on_chain: formatUnits(c.onChain),
        fixable: false,
      },
    ],
  };
}

/** A stable key of a divergence (the background pass tells new ones from known ones by it). */
export const divergenceKey = (d: Divergence) => `${d.kind}:${d.record.type}:${d.record.uid}:${d.field}`;
