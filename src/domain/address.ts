// Addresses a user sends us (to_address, withdraw_receiver): 0x + 40 hex digits in any letter case
// (the case of an address carries no meaning, and an
// EIP-55 checksum is not required of API clients); never the zero address (tokens sent there are lost).
// Pure: returns the lower-case form the database stores and the API answers, or why it is refused
// (services/requests/fields.ts turns that into the API's validation error).
export function checkAddress(s: string): { ok: true; address: string } | { ok: false; message: string } {
  if (!/^0x[0-9a-fA-F]{40}$/i.test(s)) return { ok: false, message: 'Enter a valid address: 0x followed by 40 hexadecimal characters.' };
  if (/^0x0{40}$/i.test(s)) return { ok: false, message: 'The zero address cannot receive tokens.' };
  return { ok: true, address: s.toLowerCase() };
}
