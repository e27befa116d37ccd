// One BIP-39 seed for the whole installation, sealed with the master key in the database (so every
// process of a multi-process deployment shares it). User wallets are HD-derived from it and never
// stored as raw keys. The chain accounts that pay for transactions (deployer, relayers) are derived
// from it too with local custody; with an HSM (KEY_CUSTODY=pkcs11) they are key pairs inside the token
// (src/custody/hsm-accounts.ts) and the pipeline reaches them through the same ChainSigner shape.
import { generateMnemonic, mnemonicToSeedSync, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { createHmac } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256 } from 'viem';
import { HDKey, hdKeyToAccount, type HDAccount } from 'viem/accounts';
import type { Db } from '../store/db.js';
import type { SecretBox } from '../util/secretbox.js';
import { setBounded } from '../util/bounded-map.js';
import type { ChainSigner } from './signer.js';

/** Where the deployer's and relayers' keys are: derived from the seed, or given (the HSM's). */
export interface ChainAccounts {
  deployer: ChainSigner;
  relayers: ChainSigner[];
  /**
   * The relayer of an index, loaded (found by its label, or generated the first time: a rotation brings
   * in indices beyond the first RELAYER_COUNT while the service runs).
   */
  relayerAt?(index: number): Promise<ChainSigner>;
}

/** The meta row that says where this installation's chain accounts live: `hd` (seed) or `pkcs11`. */
export const CHAIN_KEYS_META = 'chain_keys';

// A user's wallet is a pure function of the seed and the user's 12-digit uid, so creating it needs no
// allocation (nothing to race on between processes) and the key can be re-derived at any time:
//   users    m/44'/60'/0'/<uid div 10^6>/<uid mod 10^6>   (both < 2^31, non-hardened)
//   relayers m/44'/60'/1'/0/<relayer index>
//   deployer m/44'/60'/2'/0/0  (its nonce 0 deploys the forwarder, so that address never changes)
const USER_ACCOUNT = 0;
const RELAYER_ACCOUNT = 1;
const SYSTEM_ACCOUNT = 2;
const CURVE_ORDER = secp256k1.CURVE.n;

function userNumber(userUid: string): number {
  const n = Number(userUid);
  if (!Number.isSafeInteger(n) || n < 0 || n >= 1e12) throw new Error(`not a user uid: ${userUid}`);
  return n;
}

const toBigInt = (bytes: Uint8Array) => BigInt(`0x${Buffer.from(bytes).toString('hex')}`);

/**
 * BIP-32's private child key of `parent` at a non-hardened index: HMAC-SHA512 of the parent's public
 * key and the index, keyed with its chain code; the first half added to the parent's key. Null where
 * BIP-32 says the index has no key (odds about 1 in 2^127).
 */
function nonHardenedChild(parent: HDKey, index: number): Uint8Array | null {
  const data = Buffer.alloc(37);
  data.set(parent.publicKey!, 0);
  data.writeUInt32BE(index, 33);
  const il = toBigInt(createHmac('sha512', parent.chainCode!).update(data).digest().subarray(0, 32));
  if (il >= CURVE_ORDER) return null;
  const key = (il + toBigInt(parent.privateKey!)) % CURVE_ORDER;
  return key === 0n ? null : Buffer.from(key.toString(16).padStart(64, '0'), 'hex');
}

/** How many keys (accounts) and addresses a key ring keeps: the oldest goes first. */
const KEPT = 10_000;

/** Sets `k` in `map`, the oldest entry out once it holds KEPT. */
const keep = <V>(map: Map<string, V>, k: string, v: V): V => setBounded(map, k, v, KEPT);

export class KeyRing {
  private readonly cache = new Map<string, HDAccount>();
  /** Users' addresses by uid (an item mint or an allocation asks for its user's on every call). */
  private readonly addresses = new Map<string, string>();
  /** m/44'/60'/<account>'/<change>, by `account/change`: the parents of the keys derived (a few). */
  private readonly parents = new Map<string, HDKey>();
  private constructor(
    private readonly root: HDKey,
    private readonly accounts: ChainAccounts | null,
  ) {}

  /**
   * Loads the sealed seed, creating it on the very first start. Safe against two processes racing.
   * `accounts`: the chain accounts when they are not derived from the seed (the HSM's).
   */
  static async open(db: Db, box: SecretBox, opts: { mnemonic?: string; accounts?: ChainAccounts } = {}): Promise<KeyRing> {
    const supplied = opts.mnemonic;
    let row = await db.selectFrom('meta').select('value').where('key', '=', 'seed').executeTakeFirst();
    if (!row) {
      const mnemonic = supplied ?? generateMnemonic(wordlist, 256);
      if (!validateMnemonic(mnemonic, wordlist)) throw new Error('WALLET_MNEMONIC is not a valid BIP-39 mnemonic');
      await db
        .insertInto('meta')
        .values({ key: 'seed', value: box.seal(mnemonic) })
        .onConflict((oc) => oc.column('key').doNothing())
        .execute();
      row = await db.selectFrom('meta').select('value').where('key', '=', 'seed').executeTakeFirstOrThrow();
    }
    const mnemonic = box.open(row.value);
    return new KeyRing(HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic)), opts.accounts ?? null);
  }

  /** The wallet key of a user (always derived from the seed). */

  user(userUid: string): HDAccount {
    const n = userNumber(userUid);
    return this.derive(USER_ACCOUNT, Math.floor(n / 1e6), n % 1e6);
  }

  /**
   * The address of a user's wallet, lowercase: the address of user()'s key, found with one curve
   * multiplication (the child's public key) instead of the two of an account (its parent's step makes
   * the child's public key, the account makes it again). An airdrop to new users makes a wallet for
   * each: 0.47 -> 0.23 ms a wallet.
   */
  userAddress(userUid: string): string {
    const kept = this.addresses.get(userUid);
    if (kept) return kept;
    const n = userNumber(userUid);
    const known = this.cache.get(`${USER_ACCOUNT}/${Math.floor(n / 1e6)}/${n % 1e6}`);
    if (known) return keep(this.addresses, userUid, known.address.toLowerCase());
    const key = nonHardenedChild(this.parentOf(USER_ACCOUNT, Math.floor(n / 1e6)), n % 1e6);
    // No such child (BIP-32's rare gap): as the library answers it.
    const address = key ? `0x${keccak256(secp256k1.getPublicKey(key, false).subarray(1)).slice(-40)}` : this.user(userUid).address.toLowerCase();
    return keep(this.addresses, userUid, address);
  }

  relayer(index: number): ChainSigner {
    if (!this.accounts) return this.derive(RELAYER_ACCOUNT, 0, index);
    const r = this.accounts.relayers[index];
    if (!r) throw new Error(`relayer ${index} has no key in the HSM (RELAYER_COUNT is ${this.accounts.relayers.length} there)`);
    return r;
  }

  /**
   * The relayer of an index, wherever its key is: derived from the seed, or the HSM's key of that index
   * (found by its label; generated the first time, which only a relayer rotation asks for).
   */
  async relayerAt(index: number): Promise<ChainSigner> {
    if (!Number.isSafeInteger(index) || index < 0) throw new Error(`not a relayer index: ${index}`);
    if (!this.accounts) return this.derive(RELAYER_ACCOUNT, 0, index);
    const known = this.accounts.relayers[index];
    if (known) return known;
    if (!this.accounts.relayerAt) throw new Error(`relayer ${index} has no key in the HSM`);
    return this.accounts.relayerAt(index);
  }

  deployer(): ChainSigner {
    return this.accounts ? this.accounts.deployer : this.derive(SYSTEM_ACCOUNT, 0, 0);
  }

  /** Whether the chain accounts are the HSM's (else derived from the seed). */
  get chainKeysInHsm(): boolean {
    return this.accounts !== null;
  }

  private derive(accountIndex: number, changeIndex: number, addressIndex: number): HDAccount {
    const k = `${accountIndex}/${changeIndex}/${addressIndex}`;
    let acct = this.cache.get(k);
    if (!acct) {
      // From the path's parent, kept: the same key as the whole path from the root, derived in one step
      // instead of five (1.47 -> 0.47 ms a key: an airdrop to new users derives a wallet per user).
      // (viem types the path as a whole one from the root; from the parent it is its last step alone.)
      acct = hdKeyToAccount(this.parentOf(accountIndex, changeIndex), { path: `m/${addressIndex}` as `m/44'/60'/${string}` });
      keep(this.cache, k, acct);
    }
    return acct;
  }

  private parentOf(accountIndex: number, changeIndex: number): HDKey {
    const k = `${accountIndex}/${changeIndex}`;
    let parent = this.parents.get(k);
    if (!parent) {
      parent = this.root.derive(`m/44'/60'/${accountIndex}'/${changeIndex}`);
      this.parents.set(k, parent);
    }
    return parent;
  }
}
