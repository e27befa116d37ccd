// Custody pieces on their own: master keys with ids in the secret box, the signature arithmetic of HSM
// signing (low-s, recovery id), the HSM signer on a real SoftHSM2 token, and the HPKE seal of a wallet
// export as a recipient opens it with @hpke/core.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { hashTypedData, keccak256, parseSignature, recoverAddress, serializeSignature, toHex, verifyTypedData, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import { ROOT_KEY_ID, SecretBox, UnknownSealingKeyError } from '../../src/util/secretbox.js';
import { lowS, recoveryId } from '../../src/custody/hsm-signer.js';
import { HsmSigner } from '../../src/custody/hsm-signer.js';
import { Hsm } from '../../src/custody/hsm.js';
import { EXPORT_INFO, parseRecipientKey, sealTo } from '../../src/services/wallet-export.js';
import { initSoftHsmToken, listPrivateKeys, SOFTHSM_MODULE } from '../helpers/softhsm.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { loadMasterKeys, rootWrapper } from '../../src/custody/master-keys.js';
import { rotateMasterKey } from '../../src/custody/rotation.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const N = secp256k1.CURVE.n;

describe('secret box with master key ids', () => {
  it('v1 values (sealed with MASTER_KEY) still open; new keys seal v2 values naming their id', () => {
    const box = new SecretBox('11'.repeat(32));
    const old = box.seal('seed words');
    assert.match(old, /^v1:/);
    box.addKey('k2', randomBytes(32));
    box.useKey('k2');
    const fresh = box.seal('seed words');
    assert.match(fresh, /^v2:k2:/);
    assert.equal(box.open(old), 'seed words');
    assert.equal(box.open(fresh), 'seed words');
    assert.equal(SecretBox.keyIdOf(old), ROOT_KEY_ID);
    assert.equal(SecretBox.keyIdOf(fresh), 'k2');
  });

  it('a value sealed with a key this process has not loaded says so; the key in use cannot be dropped', () => {
    const a = new SecretBox();
    a.addKey('a1', randomBytes(32));
    a.useKey('a1');
    const b = new SecretBox();
    b.addKey('b1', randomBytes(32));
    b.useKey('b1');
    assert.throws(() => b.open(a.seal('x')), UnknownSealingKeyError);
    assert.throws(() => b.dropKey('b1'), /in use/);
    assert.throws(() => new SecretBox().seal('x'), /no master key/);
    assert.throws(() => b.open('v2:b1:bad'), /format/);
  });
});

describe('HSM signature arithmetic', () => {
  it('high s is brought to the lower half and the recovery id recovers the signer, for both halves', async () => {
    const pk = generatePrivateKey();
    const account = privateKeyToAccount(pk);
    const q = secp256k1.ProjectivePoint.fromPrivateKey(pk.slice(2));
    let flips = 0;
    for (let i = 0; i < 24; i++) {
      const hash = keccak256(toHex(`message ${i}`));
      const sig = secp256k1.sign(hash.slice(2), pk.slice(2), { lowS: true });
      // What a token may give: either s or n - s (both are valid ECDSA).
      const s = i % 2 ? N - sig.s : sig.s;
      const raw = Buffer.from(toHex(sig.r, { size: 32 }).slice(2) + toHex(s, { size: 32 }).slice(2), 'hex');
      const norm = lowS(raw);
      flips += norm.flipped ? 1 : 0;
      assert.ok(norm.s <= N / 2n);
      const v = recoveryId(q, BigInt(hash), norm.r, s, norm.flipped);
      assert.ok(v === 0 || v === 1);
      const signature = serializeSignature({ r: toHex(norm.r, { size: 32 }), s: toHex(norm.s, { size: 32 }), yParity: v });
      assert.equal(await recoverAddress({ hash, signature }), account.address);
    }
    assert.equal(flips, 12);
  });

  it('refuses a signature of another key and malformed ones', () => {
    const q = secp256k1.ProjectivePoint.fromPrivateKey(generatePrivateKey().slice(2));
    const other = generatePrivateKey();
    const hash = keccak256('0x01');
    const sig = secp256k1.sign(hash.slice(2), other.slice(2), { lowS: true });
    assert.equal(recoveryId(q, BigInt(hash), sig.r, sig.s, false), null);
    assert.throws(() => lowS(Buffer.alloc(63)), /64/);
    assert.throws(() => lowS(Buffer.alloc(64)), /out of range/);
  });
});

describe('HSM signer on SoftHSM2', () => {
  const token = initSoftHsmToken('mintworks-unit');
  const hsm = Hsm.open({ module: SOFTHSM_MODULE, tokenLabel: token.label, pin: token.pin });

  it('generates a secp256k1 key the token keeps sensitive and unextractable, and signs what recovers to it', async () => {
    const ref = hsm.generateEcKey('unit:relayer');
    const signer = new HsmSigner(hsm, 'unit:relayer', ref);
    for (let i = 0; i < 50; i++) {
      const hash = keccak256(toHex(`tx ${i}`));
      const sig = await signer.sign({ hash });
      const { s } = parseSignature(sig);
      assert.ok(BigInt(s) <= N / 2n, 'low s');
      assert.equal(await recoverAddress({ hash, signature: sig }), signer.address);
    }
    const typed = {
      domain: { name: 'MintworksForwarder', version: '1', chainId: 1, verifyingContract: '0x0000000000000000000000000000000000000001' as Hex },
      types: { Ping: [{ name: 'n', type: 'uint256' }] },
      primaryType: 'Ping' as const,
      message: { n: 7n },
    };
    const sig = await signer.signTypedData(typed);
    assert.ok(await verifyTypedData({ address: signer.address, ...typed, signature: sig }));
    assert.equal(await recoverAddress({ hash: hashTypedData(typed), signature: sig }), signer.address);
    const listed = listPrivateKeys(token).find((k) => k.label === 'unit:relayer');
    assert.ok(listed);
    assert.equal(listed.type, 'EC');
    assert.match(listed.access, /never extractable/);
    assert.deepEqual(hsm.describeKeys('unit:'), [{ label: 'unit:relayer', privateEc: true, sensitive: true, extractable: false }]);
  });

  it("wraps with the token's AES key: what it seals opens only through it", () => {
    const k = hsm.aesKey('unit:wrap');
    assert.ok(hsm.aesKey('unit:wrap').equals(k), 'found again by label, not made twice');
    const secret = randomBytes(32);
    const sealed = hsm.encrypt(k, secret);
    assert.equal(sealed.includes(secret), false);
    assert.ok(hsm.decrypt(k, sealed).equals(secret));
    sealed[sealed.length - 1] ^= 1;
    assert.throws(() => hsm.decrypt(k, sealed));
  });

  it('a wrong module or token label is refused with the setting to fix', () => {
    assert.throws(() => Hsm.open({ module: SOFTHSM_MODULE, tokenLabel: 'no-such-token', pin: token.pin }), /PKCS11_TOKEN_LABEL/);
    assert.throws(() => Hsm.open({ module: '/nonexistent/lib.so', tokenLabel: token.label, pin: token.pin }), /PKCS11_MODULE/);
  });
});

describe('wallet export sealing', () => {
  const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });
  it('the recipient opens it with @hpke/core and the agreed info; another info or key fails', async () => {
    const kp = await suite.kem.generateKeyPair();
    const pub = Buffer.from(await suite.kem.serializePublicKey(kp.publicKey)).toString('base64url');
    const sealed = await sealTo(parseRecipientKey(pub), new TextEncoder().encode('0xabc'));
    const open = async (info: string, key = kp.privateKey) =>
      new TextDecoder().decode(
        await (
          await suite.createRecipientContext({
            recipientKey: key,
            enc: sealed.enc.buffer as ArrayBuffer,
            info: new TextEncoder().encode(info).buffer as ArrayBuffer,
          })
        ).open(sealed.ciphertext.buffer as ArrayBuffer),
      );
    assert.equal(await open(EXPORT_INFO), '0xabc');
    await assert.rejects(open('another info'));
    await assert.rejects(open(EXPORT_INFO, (await suite.kem.generateKeyPair()).privateKey));
  });

  it('recipient keys: base64url of exactly 32 bytes', () => {
    assert.throws(() => parseRecipientKey('a+b/'), /base64url/);
    assert.throws(() => parseRecipientKey(Buffer.alloc(33).toString('base64url')), /33 bytes/);
    assert.equal(parseRecipientKey(Buffer.alloc(32, 1).toString('base64url')).length, 32);
  });

  it('a low-order recipient key (all zeros) is refused as a validation error, not a failure', async () => {
    await assert.rejects(sealTo(new Uint8Array(32), new TextEncoder().encode('0xabc')), (err: Error & { status?: number }) =>
      /usable X25519/.test(JSON.stringify((err as unknown as { toBody(): unknown }).toBody())),
    );
  });
});

describe('master key rotation with local custody', () => {
  it('re-seals every value under a new key wrapped by MASTER_KEY; another process loads it and opens them; the root stays', async () => {
    const store = openStore({ dataDir: await migratedSqliteDir() });
    try {
      await migrateToLatest(store);
      const root = '33'.repeat(32);
      const box = new SecretBox(root);
      const wrapper = rootWrapper(new SecretBox(root));
      await store.db
        .insertInto('meta')
        .values({ key: 'seed', value: box.seal('seed words') })
        .execute();
      const r = await rotateMasterKey(store.db, box, wrapper, { propagationMs: 0 });
      assert.equal(r.previous_key_id, ROOT_KEY_ID);
      assert.equal(r.resealed, 1);
      const sealed = (await store.db.selectFrom('meta').select('value').where('key', '=', 'seed').executeTakeFirstOrThrow()).value;
      assert.equal(SecretBox.keyIdOf(sealed), r.key_id);
      assert.match(
        (await store.db.selectFrom('meta').select('value').where('key', '=', `master_key:${r.key_id}`).executeTakeFirstOrThrow()).value,
        /^root:v1:/,
        'wrapped by MASTER_KEY, never in the clear',
      );
      // Another process with the same MASTER_KEY picks the new key up and seals with it.
      const other = new SecretBox(root);
      await loadMasterKeys(store.db, other, rootWrapper(new SecretBox(root)));
      assert.equal(other.currentKeyId, r.key_id);
      assert.equal(other.open(sealed), 'seed words');
      // A second rotation drops the first key, here and in the other process at its next reading.
      const r2 = await rotateMasterKey(store.db, box, wrapper, { propagationMs: 0 });
      assert.deepEqual(r2.dropped, [r.key_id]);
      await loadMasterKeys(store.db, other, rootWrapper(new SecretBox(root)));
      assert.equal(other.has(r.key_id), false);
      assert.equal(other.currentKeyId, r2.key_id);
    } finally {
      await store.close();
    }
  });
});
