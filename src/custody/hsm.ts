// The PKCS#11 token (KEY_CUSTODY=pkcs11): one logged-in session per process, through which the chain
// accounts' secp256k1 keys are generated and used, and the master key is wrapped and unwrapped by an
// AES key of the token. No private key or wrapping key ever leaves the token: every object made here is
// CKA_SENSITIVE and not CKA_EXTRACTABLE, so the module refuses to give its value to anyone, us included.
//
// PKCS#11 calls are synchronous here (pkcs11js), so the one session is never used by two operations at
// once on a thread; each thread that signs (the API's, the workers') opens its own session.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import type * as Pkcs11Types from 'pkcs11js';

const require = createRequire(import.meta.url);

/** secp256k1's OID (1.3.132.0.10) as DER, the CKA_EC_PARAMS of every chain key. */
const SECP256K1_PARAMS = Buffer.from('06052b8104000a', 'hex');

export interface HsmSettings {
  module: string;
  tokenLabel: string;
  pin: string;
}

/** The PIN from PKCS11_PIN or the first line of PKCS11_PIN_FILE (a file keeps it out of the environment). */
export function readPin(pin: string | undefined, pinFile: string | undefined): string {
  if (pin) return pin;
  if (!pinFile) throw new Error('KEY_CUSTODY=pkcs11 needs PKCS11_PIN or PKCS11_PIN_FILE');
  const line = fs.readFileSync(pinFile, 'utf8').split('\n')[0].trim();
  if (!line) throw new Error(`PKCS11_PIN_FILE ${pinFile} is empty`);
  return line;
}

export class HsmError extends Error {}

/** A key pair in the token: its CKA_ID (shared by both halves) and its public key. */
export interface EcKeyRef {
  id: Buffer;
  publicKey: Buffer;
}

// The module's library is process-wide: every thread's PKCS11 object shares it, and C_Finalize by one
// would end the sessions of all. So it is initialised once per module path and never finalised (the
// process exit releases it), with one exception below.
const loaded = new Map<string, { p11: Pkcs11Types.PKCS11; ownInit: boolean }>();

/**
 * `firstOpen`: this thread initialised the library and this is its first open in it (true once: later
 * opens may find sessions of this process open).
 */
function moduleFor(path: string): { p11: Pkcs11Types.PKCS11; lib: typeof Pkcs11Types; firstOpen: boolean } {
  const lib = require('pkcs11js') as typeof Pkcs11Types;
  let entry = loaded.get(path);
  if (!entry) {
    if (!fs.existsSync(path)) throw new HsmError(`PKCS11_MODULE ${path} does not exist`);
    const p11 = new lib.PKCS11();
    p11.load(path);
    let ownInit = true;
    try {
      p11.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
    } catch (err) {
      // Another thread of this process initialised the library already.
      if (!/CKR_CRYPTOKI_ALREADY_INITIALIZED/.test((err as Error).message)) throw err;
      ownInit = false;
    }
    entry = { p11, ownInit };
    loaded.set(path, entry);
  }
  const firstOpen = entry.ownInit;
  entry.ownInit = false;
  return { p11: entry.p11, lib, firstOpen };
}

/** Times the library is initialised again when it does not list the token or fails to read it (see loggedInSession). */
const TOKEN_LOOKUPS = 5;
const TOKEN_LOOKUP_PAUSE_MS = 100;

/**
 * A logged-in session on the token labelled `s.tokenLabel`. SoftHSM2 lists the tokens it read when the
 * library was initialised, and a token whose file another process was rewriting at that moment (a
 * login rewrites it) is left out until the next initialisation, or answers CKR_GENERAL_ERROR: 5 of 99
 * process starts missed the token beside a process logging in over and over, and 2 of 93 still failed
 * with the lookup alone retried. So a library this thread initialised is finalised and initialised
 * again when either happens, a few times. Only then: no session of this process can exist on a token
 * it does not list, and the other threads that use the library start after the first open
 * (`mayInitAgain`: this thread initialised the library and opens its first session).
 */
export function loggedInSession(p11: Pkcs11Types.PKCS11, lib: Pkcs11Constants, s: HsmSettings, mayInitAgain: boolean): Buffer {
  for (let attempt = 1; ; attempt++) {
    try {
      return openAndLogIn(p11, lib, s);
    } catch (err) {
      const unread = err instanceof TokenNotListed || /CKR_GENERAL_ERROR/.test((err as Error).message);
      if (!unread || !mayInitAgain || attempt >= TOKEN_LOOKUPS) throw err;
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, TOKEN_LOOKUP_PAUSE_MS); // start-up only
    p11.C_Finalize();
    p11.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
  }
}

class TokenNotListed extends HsmError {}

/** The constants of pkcs11js a session's opening uses. */
type Pkcs11Constants = Pick<typeof Pkcs11Types, 'CKF_OS_LOCKING_OK' | 'CKF_RW_SESSION' | 'CKF_SERIAL_SESSION' | 'CKU_USER'>;

function openAndLogIn(p11: Pkcs11Types.PKCS11, lib: Pkcs11Constants, s: HsmSettings): Buffer {
  const slot = p11.C_GetSlotList(true).find((sl) => p11.C_GetTokenInfo(sl).label.trim() === s.tokenLabel);
  if (!slot) throw new TokenNotListed(`no token labelled "${s.tokenLabel}" in ${s.module} (PKCS11_TOKEN_LABEL)`);
  const session = p11.C_OpenSession(slot, lib.CKF_RW_SESSION | lib.CKF_SERIAL_SESSION);
  try {
    p11.C_Login(session, lib.CKU_USER, s.pin);
  } catch (err) {
    const m = (err as Error).message;
    // Another session of this process logged in already: the login is per application, not per session.
    if (!/CKR_USER_ALREADY_LOGGED_IN/.test(m)) {
      p11.C_CloseSession(session);
      throw new HsmError(/CKR_PIN_INCORRECT/.test(m) ? `PKCS11_PIN is wrong for token "${s.tokenLabel}"` : `cannot log in to token "${s.tokenLabel}": ${m}`);
    }
  }
  return session;
}

export class Hsm {
  private constructor(
    private readonly p11: Pkcs11Types.PKCS11,
    private readonly lib: typeof Pkcs11Types,
    private readonly session: Buffer,
    readonly tokenLabel: string,
  ) {}

  /** Opens a session on the token labelled `tokenLabel` and logs in. */
  static open(s: HsmSettings): Hsm {
    const { p11, lib, firstOpen } = moduleFor(s.module);
    return new Hsm(p11, lib, loggedInSession(p11, lib, s, firstOpen), s.tokenLabel);
  }

  close(): void {
    try {
      this.p11.C_CloseSession(this.session);
    } catch {
      /* already closed with the library */
    }
  }

  private find(template: Pkcs11Types.Template): Buffer[] {
    this.p11.C_FindObjectsInit(this.session, template);
    try {
      return this.p11.C_FindObjects(this.session, 16);
    } finally {
      this.p11.C_FindObjectsFinal(this.session);
    }
  }

  private findOne(cls: number, label: string): Buffer | null {
    const found = this.find([
      { type: this.lib.CKA_CLASS, value: cls },
      { type: this.lib.CKA_LABEL, value: label },
    ]);
    if (found.length > 1) throw new HsmError(`token "${this.tokenLabel}" holds ${found.length} objects labelled "${label}": remove the extra ones`);
    return found[0] ?? null;
  }

  // ------------------------------------------------------------------------------ secp256k1 keys

  /** The key pairs labelled `label`: their CKA_ID and uncompressed public key (65 bytes, 04 || x || y). */
  ecKeys(label: string): EcKeyRef[] {
    const L = this.lib;
    return this.find([
      { type: L.CKA_CLASS, value: L.CKO_PUBLIC_KEY },
      { type: L.CKA_LABEL, value: label },
    ]).map((h) => {
      const [id, point] = this.p11.C_GetAttributeValue(this.session, h, [{ type: L.CKA_ID }, { type: L.CKA_EC_POINT }]);
      return { id: id.value as Buffer, publicKey: decodeEcPoint(point.value as Buffer) };
    });
  }

  /** Generates a secp256k1 key pair inside the token; the private half is sensitive and never extractable. */
  generateEcKey(label: string): EcKeyRef {
    const L = this.lib;
    const id = randomBytes(16);
    this.p11.C_GenerateKeyPair(
      this.session,
      { mechanism: L.CKM_EC_KEY_PAIR_GEN },
      [
        { type: L.CKA_CLASS, value: L.CKO_PUBLIC_KEY },
        { type: L.CKA_KEY_TYPE, value: L.CKK_EC },
        { type: L.CKA_TOKEN, value: true },
        { type: L.CKA_VERIFY, value: true },
        { type: L.CKA_LABEL, value: label },
        { type: L.CKA_ID, value: id },
        { type: L.CKA_EC_PARAMS, value: SECP256K1_PARAMS },
      ],
      [
        { type: L.CKA_CLASS, value: L.CKO_PRIVATE_KEY },
        { type: L.CKA_KEY_TYPE, value: L.CKK_EC },
        { type: L.CKA_TOKEN, value: true },
        { type: L.CKA_PRIVATE, value: true },
        { type: L.CKA_SIGN, value: true },
        // Signing only: no decryption, unwrapping or derivation with a chain key.
        { type: L.CKA_DECRYPT, value: false },
        { type: L.CKA_UNWRAP, value: false },
        { type: L.CKA_DERIVE, value: false },
        { type: L.CKA_SENSITIVE, value: true },
        { type: L.CKA_EXTRACTABLE, value: false },
        { type: L.CKA_LABEL, value: label },
        { type: L.CKA_ID, value: id },
      ],
    );
    const made = this.ecKeys(label).find((k) => k.id.equals(id));
    if (!made) throw new HsmError(`token "${this.tokenLabel}" did not keep the key pair "${label}" it generated`);
    return made;
  }

  /** Removes both halves of a key pair (one generated by a process that lost the race to record its label). */
  destroyEcKey(id: Buffer): void {
    for (const h of this.find([{ type: this.lib.CKA_ID, value: id }])) this.p11.C_DestroyObject(this.session, h);
  }

  /** The handle of the private key with CKA_ID `id` (looked up once by the signer, then reused). */
  privateKey(id: Buffer): Buffer {
    const [h] = this.find([
      { type: this.lib.CKA_CLASS, value: this.lib.CKO_PRIVATE_KEY },
      { type: this.lib.CKA_ID, value: id },
    ]);
    if (!h) throw new HsmError(`token "${this.tokenLabel}" has no private key with id ${id.toString('hex')}`);
    return h;
  }

  /** CKM_ECDSA over a 32-byte digest: r || s, 64 bytes (s not yet normalised). */
  signDigest(key: Buffer, digest: Buffer): Buffer {
    this.p11.C_SignInit(this.session, { mechanism: this.lib.CKM_ECDSA }, key);
    return this.p11.C_Sign(this.session, digest, Buffer.alloc(64));
  }

  /** Key attributes as the token reports them (for checks and tests): class, key type, sensitivity. */
  describeKeys(labelPrefix: string): { label: string; privateEc: boolean; sensitive: boolean; extractable: boolean }[] {
    const L = this.lib;
    return this.find([{ type: L.CKA_CLASS, value: L.CKO_PRIVATE_KEY }])
      .map((h) => {
        const [label, keyType, sensitive, extractable] = this.p11.C_GetAttributeValue(this.session, h, [
          { type: L.CKA_LABEL },
          { type: L.CKA_KEY_TYPE },
          { type: L.CKA_SENSITIVE },
          { type: L.CKA_EXTRACTABLE },
        ]);
        return {
          label: (label.value as Buffer).toString('utf8'),
          privateEc: ulong(keyType.value as Buffer) === L.CKK_EC,
          sensitive: (sensitive.value as Buffer)[0] === 1,
          extractable: (extractable.value as Buffer)[0] === 1,
        };
      })
      .filter((k) => k.label.startsWith(labelPrefix));
  }

  // ---------------------------------------------------------------------------- the wrapping key

  /** The AES-256 key labelled `label`, generated inside the token the first time. */
  aesKey(label: string): Buffer {
    const existing = this.findOne(this.lib.CKO_SECRET_KEY, label);
    if (existing) return existing;
    const L = this.lib;
    return this.p11.C_GenerateKey(this.session, { mechanism: L.CKM_AES_KEY_GEN }, [
      { type: L.CKA_CLASS, value: L.CKO_SECRET_KEY },
      { type: L.CKA_KEY_TYPE, value: L.CKK_AES },
      { type: L.CKA_VALUE_LEN, value: 32 },
      { type: L.CKA_TOKEN, value: true },
      { type: L.CKA_PRIVATE, value: true },
      { type: L.CKA_SENSITIVE, value: true },
      { type: L.CKA_EXTRACTABLE, value: false },
      { type: L.CKA_ENCRYPT, value: true },
      { type: L.CKA_DECRYPT, value: true },
      { type: L.CKA_LABEL, value: label },
    ]);
  }

  /** AES-256-GCM inside the token: iv (12) || ciphertext || tag (16). */
  encrypt(key: Buffer, plain: Buffer): Buffer {
    const iv = randomBytes(12);
    this.p11.C_EncryptInit(this.session, this.gcm(iv), key);
    const out = this.p11.C_Encrypt(this.session, plain, Buffer.alloc(plain.length + 16));
    return Buffer.concat([iv, out]);
  }

  decrypt(key: Buffer, sealed: Buffer): Buffer {
    if (sealed.length < 12 + 16) throw new HsmError('wrapped value too short');
    this.p11.C_DecryptInit(this.session, this.gcm(sealed.subarray(0, 12)), key);
    return this.p11.C_Decrypt(this.session, sealed.subarray(12), Buffer.alloc(sealed.length - 12));
  }

  private gcm(iv: Buffer): Pkcs11Types.Mechanism {
    return {
      mechanism: this.lib.CKM_AES_GCM,
      parameter: { type: this.lib.CK_PARAMS_AES_GCM, iv, ivBits: 96, aad: Buffer.alloc(0), tagBits: 128 } as unknown as Pkcs11Types.IParams,
    };
  }
}

/** A CK_ULONG attribute as the module wrote it (4 or 8 bytes, host order: little-endian here). */
function ulong(b: Buffer): number {
  return b.length === 8 ? Number(b.readBigUInt64LE(0)) : b.readUInt32LE(0);
}

/** CKA_EC_POINT is the point as a DER OCTET STRING (some modules give the raw point): 65 bytes 04 || x || y. */
export function decodeEcPoint(v: Buffer): Buffer {
  if (v.length === 65 && v[0] === 0x04) return v;
  if (v.length === 67 && v[0] === 0x04 && v[1] === 65 && v[2] === 0x04) return v.subarray(2);
  throw new HsmError(`unexpected EC point encoding (${v.length} bytes): not an uncompressed secp256k1 point`);
}
