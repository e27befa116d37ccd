// Addresses a user sends us (to_address, withdraw_receiver): 0x + 40 hex digits in any letter case
// (the case of an address carries no meaning, and an
// EIP-55 checksum is not required of API clients); never the zero address (tokens sent there are lost).
// Pure: returns the lower-case form the database stores and the API answers, or why it is refused.
import { ApiError } from '../util/errors.js';

export function checkAddress(s: string): { ok: true; address: string } | { ok: false; message: string } {
  if (!/^0x[0-9a-fA-F]{40}$/i.test(s)) return { ok: false, message: 'Enter a valid address: 0x followed by 40 hexadecimal characters.' };
  if (/^0x0{40}$/i.test(s)) return { ok: false, message: 'The zero address cannot receive tokens.' };
  return { ok: true, address: s.toLowerCase() };
}

/** A request's address field, validated, in lower case; else a validation_error naming the field. */
export function parseAddressField(field: string, s: string): string {
  const r = checkAddress(s);
  if (!r.ok) throw ApiError.validation([{ field, code: 'invalid', message: r.message }]);
  return r.address;
}
