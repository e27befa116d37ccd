// Wallet export (self-custody): the user's wallet private key, handed over sealed to a public key the
// user (or the App acting for them) holds, with HPKE (RFC 9180) base mode: DHKEM(X25519, HKDF-SHA256),
// HKDF-SHA256, AES-256-GCM, info `mintworks wallet export v1`, no AAD. The key exists in the clear only
// in this process's memory. The service keeps custody afterwards: it can still sign for the wallet (it is
// derived from the seed), so an exported wallet is one that two parties control (docs/custody.md).
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import type { Ctx } from './context.js';
import { ApiError } from '../util/errors.js';
import { nowIso } from '../util/time.js';
import { requireUserRow, walletsOf } from './users/users.js';
import { userView } from './views.js';
import { emitEvent } from './events.js';
import { recordAudit, type Actor } from './audit.js';

export const EXPORT_INFO = 'mintworks wallet export v1';

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });

/** A raw X25519 public key in base64url (32 bytes), or a validation error naming the field. */
export function parseRecipientKey(value: string): Uint8Array {
  const bad = (message: string) => ApiError.validation([{ field: 'recipient_public_key', code: 'invalid', message }]);
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) throw bad('recipient_public_key must be base64url (a raw 32-byte X25519 public key)');
  const raw = Buffer.from(value, 'base64url');
  if (raw.length !== 32) throw bad(`recipient_public_key must be a raw 32-byte X25519 public key (got ${raw.length} bytes)`);
  return new Uint8Array(raw);
}

/** HPKE base-mode seal of `plain` to `recipient` (raw X25519 public key). */
export async function sealTo(recipient: Uint8Array, plain: Uint8Array): Promise<{ enc: Uint8Array; ciphertext: Uint8Array }> {
  const bytes = (u: Uint8Array) => u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;
  let sender;
  try {
    const recipientPublicKey = await suite.kem.deserializePublicKey(bytes(recipient));
    // A low-order point gives an all-zero shared secret, which the KEM refuses here.
    sender = await suite.createSenderContext({ recipientPublicKey, info: bytes(new TextEncoder().encode(EXPORT_INFO)) });
  } catch {
    throw ApiError.validation([{ field: 'recipient_public_key', code: 'invalid', message: 'recipient_public_key is not a usable X25519 public key' }]);
  }
  const ciphertext = new Uint8Array(await sender.seal(bytes(plain)));
  return { enc: new Uint8Array(sender.enc), ciphertext };
}

/**
 * POST /admin/v1/apps/<app>/users/<user>/wallet-export. The user must have a wallet (on `chainId`
 * when given). Marks the user exported, emits `user.wallet_exported` and records the export in the
 * audit log, all in one transaction.
 */
export async function exportWallet(ctx: Ctx, appUid: string, userUid: string, input: { chain_id?: number | null; recipient_public_key: string }, actor: Actor) {
  const recipient = parseRecipientKey(input.recipient_public_key);
  const user = await requireUserRow(ctx, appUid, userUid);
  const wallets = await walletsOf(ctx.db, [user.uid]);
  const wallet = input.chain_id == null ? wallets[0] : wallets.find((w) => Number(w.chain_id) === input.chain_id);
  if (!wallet) {
    throw input.chain_id == null
      ? ApiError.of('no_wallet', 'User has no wallet yet: it is created at their first mint, allocation or deposit request.')
      : ApiError.of('no_wallet', `User has no wallet on chain ${input.chain_id}.`, 'chain_id');
  }
  const account = ctx.keys.user(user.uid);
  if (account.address.toLowerCase() !== wallet.address.toLowerCase())
    throw new Error(`wallet ${wallet.address} of user ${user.uid} is not the key the seed derives`);
  const key = account.getHdKey().privateKey;
  if (!key) throw new Error('the wallet key cannot be derived');
  const plain = new TextEncoder().encode(`0x${Buffer.from(key).toString('hex')}`);
  let sealed: { enc: Uint8Array; ciphertext: Uint8Array };
  try {
    sealed = await sealTo(recipient, plain);
  } finally {
    plain.fill(0);
  }
  const chainId = Number(wallet.chain_id);
  await ctx.db.transaction().execute(async (tx) => {
    const t = nowIso();
    await tx.updateTable('users').set({ wallet_exported_at: t }).where('uid', '=', user.uid).execute();
    const u = await tx.selectFrom('users').selectAll().where('uid', '=', user.uid).executeTakeFirstOrThrow();
    await emitEvent(tx, appUid, 'user.wallet_exported', {
      user: { ...userView(u, wallets, ctx.installation), wallet_exported_at: t },
      chain_id: chainId,
      address: wallet.address.toLowerCase(),
    });
    await recordAudit(tx, actor, {
      action: 'wallet.exported',
      app_uid: appUid,
      user_uid: user.uid,
      chain_id: chainId,
      details: { address: wallet.address.toLowerCase(), recipient_public_key: input.recipient_public_key },
    });
  });
  return {
    address: wallet.address.toLowerCase(),
    enc: Buffer.from(sealed.enc).toString('base64url'),
    ciphertext: Buffer.from(sealed.ciphertext).toString('base64url'),
  };
}
