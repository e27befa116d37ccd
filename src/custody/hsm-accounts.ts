// The chain accounts (deployer, relayers) of KEY_CUSTODY=pkcs11: key pairs generated in the token and
// found again by label. The database records each label's address (custody_keys), which decides
// between two processes that generated a key for the same label at the same time: the recorded one
// is kept, the other destroyed.
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { nowIso } from '../util/time.js';
import type { Hsm } from './hsm.js';
import { HsmSigner, addressOfPublicKey } from './hsm-signer.js';

/**
 * The labels of one installation's objects in the token: `mintworks:<installation>:…`, so that two
 * installations sharing a token (or an HSM partition) never take each other's keys.
 */
export interface HsmLabels {
  prefix: string;
  deployer: string;
  relayer(index: number): string;
  wrappingKey: string;
}

const LABEL_META = 'hsm_label_prefix';

export async function hsmLabels(db: Db): Promise<HsmLabels> {
  await db
    .insertInto('meta')
    .values({ key: LABEL_META, value: `mintworks:${randomBytes(4).toString('hex')}:` })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const prefix = (await db.selectFrom('meta').select('value').where('key', '=', LABEL_META).executeTakeFirstOrThrow()).value;
  return { prefix, deployer: `${prefix}deployer`, relayer: (i) => `${prefix}relayer:${i}`, wrappingKey: `${prefix}master-wrap` };
}

export async function hsmAccount(db: Db, hsm: Hsm, label: string, role: 'deployer' | 'relayer'): Promise<HsmSigner> {
  const recorded = await db.selectFrom('custody_keys').select('address').where('label', '=', label).executeTakeFirst();
  const keys = hsm.ecKeys(label);
  if (recorded) {
    const ref = keys.find((k) => addressOfPublicKey(k.publicKey).toLowerCase() === recorded.address);
    if (!ref)
      throw new Error(
        `the token "${hsm.tokenLabel}" has no key "${label}" for ${recorded.address}, which this installation uses: is PKCS11_TOKEN_LABEL the token it was set up with?`,
      );
    return new HsmSigner(hsm, label, ref);
  }
  const ref = keys[0] ?? hsm.generateEcKey(label);
  const address = addressOfPublicKey(ref.publicKey).toLowerCase();
  await db
    .insertInto('custody_keys')
    .values({ label, role, address, created_at: nowIso(), retired_at: null })
    .onConflict((oc) => oc.column('label').doNothing())
    .execute();
  const winner = await db.selectFrom('custody_keys').select('address').where('label', '=', label).executeTakeFirstOrThrow();
  if (winner.address !== address) {
    hsm.destroyEcKey(ref.id);
    return hsmAccount(db, hsm, label, role);
  }
  return new HsmSigner(hsm, label, ref);
}
