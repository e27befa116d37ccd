// Addresses a user sends us (to_address, withdraw_receiver): 0x + 40 hex digits, all lower case, all
// upper case, or a valid EIP-55 checksum; never the zero address (tokens sent there are lost).
// Pure: returns the lower-case form the database stores, or the reason it is refused.
import { isAddress } from 'viem';
import { ApiError } from '../util/errors.js';

export function checkAddress(s: string): { ok: true; address: string } | { ok: false; message: string } {
  if (!/^0x[0-9a-fA-F]{40}$/.test(s)) return { ok: false, message: 'Enter a valid address: 0x followed by 40 hexadecimal characters.' };
  const hex = s.slice(2);
  const mixedCase = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (mixedCase && !isAddress(s, { strict: true })) return { ok: false, message: 'Address checksum is invalid (EIP-55).' };
  if (/^0x0{40}$/.test(s)) return { ok: false, message: 'The zero address cannot receive tokens.' };
  return { ok: true, address: s.toLowerCase() };
}

/** A request's address field, validated, in lower case; else a validation_error naming the field. */
export function parseAddressField(field: string, s: string): string {
  const r = checkAddress(s);
  if (!r.ok) throw ApiError.validation([{ field, code: 'invalid', message: r.message }]);
  return r.address;
}
