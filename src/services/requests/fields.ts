// Request fields checked by the domain's rules, refused as the API's validation_error naming the field.
import { checkAddress } from '../../domain/address.js';
import { ApiError } from '../../util/errors.js';

/** A request's address field, validated, in lower case; else a validation_error naming the field. */
export function parseAddressField(field: string, s: string): string {
  const r = checkAddress(s);
  if (!r.ok) throw ApiError.validation([{ field, code: 'invalid', message: r.message }]);
  return r.address;
}
