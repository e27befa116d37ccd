// Every machine code an error of the API carries, with its HTTP status and when it is given: the one
// list docs/api.md's table is checked against (test/unit/error-codes.test.ts). The list is `as const`, so
// its codes are a type: an error is built by naming its code (`ApiError.of('asset_name_exists')`), the
// status comes from here, and a misspelt code does not compile. `message`: the answer's message when the
// thrower gives none (every code without one must be given a message where it is thrown). `fieldName`: the
// field the answer names when the thrower names none. `field`: a code of a validation error (it names the field). `fallback`: the code of a status no route names itself (a
// failure of the HTTP stack: an unknown route, an over-long header, a closing server).
export interface ErrorCodeEntry {
  readonly code: string;
  readonly status: number;
  readonly when: string;
  readonly message?: string;
  readonly field?: true;
  readonly fieldName?: string;
  readonly fallback?: true;
}

export const ERROR_CODES = [
  { code: 'required', status: 400, when: 'a required field is missing (validation_error, names the field)', field: true },
  { code: 'invalid', status: 400, when: 'a field has a wrong value (validation_error, names the field)', field: true },
  { code: 'image_url_not_allowed', status: 400, when: 'an image URL the outbound guard refuses (validation_error on data.image_url)', field: true },
  { code: 'bad_request', status: 400, when: 'a request the server cannot read otherwise', message: 'Bad request.', fallback: true },
  { code: 'invalid_json', status: 400, when: 'the body is not JSON', message: 'Request body is not valid JSON.' },
  {
    code: 'bad_url',
    status: 400,
    when: 'the URL is not valid UTF-8 once percent-decoded',
    message: 'The URL is not valid: percent-encoded bytes must form UTF-8 text.',
  },
  { code: 'user_exists', status: 400, when: 'POST /user with an email or external id the App already has', message: 'User already exists.' },
  {
    code: 'asset_external_id_exists',
    status: 400,
    when: 'POST /asset with an asset_external_id the App already has',
    message: 'Asset with this asset_external_id already exists',
    fieldName: 'asset_external_id',
  },
  { code: 'asset_name_exists', status: 400, when: 'a unique_name asset whose name the collection already has', message: 'Asset with this name already exists' },
  { code: 'asset_not_minted', status: 400, when: 'transfer or burn of an asset not minted yet', message: 'Asset is not minted yet.' },
  { code: 'asset_burned', status: 400, when: 'an action on a burned asset', message: 'Asset is burned.' },
  { code: 'asset_burning', status: 400, when: 'an action on an asset being burned', message: 'Asset is being burned.' },
  { code: 'asset_transferring', status: 400, when: 'an action on an asset being transferred', message: 'Asset is already being transferred.' },
  {
    code: 'asset_editing',
    status: 400,
    when: 'an edit while the previous edit is on its way',
    message: 'Asset is already being edited; send the edit again once is_editing is false.',
  },
  {
    code: 'asset_soulbound',
    status: 400,
    when: 'a transfer of an asset of a soulbound collection (burns are allowed)',
    message: 'The asset belongs to a soulbound collection: it can be burned, never transferred.',
  },
  { code: 'not_owner', status: 400, when: 'from_user_uid does not own the asset', message: 'Asset is not owned by from_user_uid.' },
  {
    code: 'not_editable',
    status: 400,
    when: 'an edit of an asset whose collection is not editable',
    message: 'Assets of this collection cannot be edited: it was created without editable assets.',
  },
  { code: 'precondition_failed', status: 400, when: 'the asset cannot be changed right now', message: 'The asset cannot be changed right now.' },
  { code: 'no_wallet', status: 400, when: 'a wallet export for a user without a wallet (on that chain)' },
  {
    code: 'duplicate_nonce',
    status: 400,
    when: 'an allocation nonce already used for the reward, or an item mint nonce for the item',
    message: 'An allocation with this nonce already exists for this reward.',
    fieldName: 'nonce',
  },
  { code: 'insufficient_supply', status: 400, when: 'an allocation over what the reward has left' },
  {
    code: 'reward_withdrawn',
    status: 400,
    when: 'an allocation or claim on a reward already withdrawn',
    message: 'Reward has been withdrawn: it accepts no more allocations or claims.',
  },
  { code: 'already_withdrawn', status: 400, when: 'a second withdrawal of a reward' },
  {
    code: 'item_external_id_exists',
    status: 400,
    when: 'POST /item with an item_external_id the App already has',
    message: 'Item with this item_external_id already exists',
    fieldName: 'item_external_id',
  },
  { code: 'max_supply_exceeded', status: 400, when: "an item mint past what the item's max supply leaves" },
  { code: 'insufficient_balance', status: 400, when: 'an item transfer or burn over what the user holds and has not already sent' },
  { code: 'unauthorized', status: 401, when: 'missing or wrong API key, token or operator token', fallback: true },
  { code: 'invalid_token', status: 401, when: 'a bearer token that is not a valid JWT of the App' },
  { code: 'forbidden', status: 403, when: 'refused for this client', fallback: true },
  {
    code: 'cross_site_request',
    status: 403,
    when: 'a console request another site could have made',
    message: "Console requests are accepted from the console's own pages only.",
  },
  { code: 'not_found', status: 404, when: 'an unknown object or path (after authentication)', message: 'Not Found', fallback: true },
  { code: 'method_not_allowed', status: 405, when: 'a method the path does not take', fallback: true },
  { code: 'not_acceptable', status: 406, when: 'an Accept header the API cannot answer', fallback: true },
  { code: 'request_timeout', status: 408, when: 'a request that did not arrive in time', fallback: true },
  { code: 'conflict', status: 409, when: 'a conflicting request', fallback: true },
  {
    code: 'idempotency_key_in_use',
    status: 409,
    when: 'the same Idempotency-Key is still being answered',
    message: 'A request with this Idempotency-Key is still running: retry once it has been answered.',
  },
  { code: 'webhook_not_configured', status: 409, when: 'a webhook action for an App without a webhook', message: 'This App has no webhook configured.' },
  { code: 'not_pending', status: 409, when: 'cancelling a chain transaction that is already mined or settled' },
  { code: 'not_cancellable', status: 409, when: 'cancelling a deployment, or a transaction of an account not of this installation' },
  { code: 'changed', status: 409, when: 'cancelling a chain transaction that was replaced or mined meanwhile' },
  { code: 'webhook_disabled', status: 409, when: 'a test event to a disabled webhook' },
  { code: 'length_required', status: 411, when: 'a body without a length', fallback: true },
  { code: 'payload_too_large', status: 413, when: 'a body over 1 MiB', fallback: true },
  { code: 'uri_too_long', status: 414, when: 'a URL path segment over 100 characters', message: 'A segment of the URL path is too long.', fallback: true },
  {
    code: 'unsupported_media_type',
    status: 415,
    when: 'a POST or PUT body that is not application/json',
    message: 'Send the body as JSON with Content-Type: application/json.',
    fallback: true,
  },
  { code: 'unprocessable_entity', status: 422, when: 'a request the server understood but cannot carry out', fallback: true },
  {
    code: 'idempotency_key_reused',
    status: 422,
    when: 'an Idempotency-Key reused with another request',
    message: 'This Idempotency-Key was used for another request: use a new key for a new request.',
    fieldName: 'Idempotency-Key',
  },
  { code: 'rate_limited', status: 429, when: 'over RATE_LIMIT per key, or too many failed authentications per address', fallback: true },
  { code: 'too_many_attempts', status: 429, when: 'too many failed console sign-ins from one address' },
  { code: 'request_header_fields_too_large', status: 431, when: 'headers over 16 KiB', fallback: true },
  { code: 'internal_error', status: 500, when: 'an unexpected failure (logged with the request)' },
  { code: 'unavailable', status: 503, when: 'the server is shutting down', message: 'The service is shutting down: retry shortly.', fallback: true },
  {
    code: 'database_unavailable',
    status: 503,
    when: 'the database cannot be reached or used right now: nothing was written, retry (the same Idempotency-Key answers as the first); with retry-after',
    message: 'The database is unavailable right now: retry shortly (with the same Idempotency-Key).',
  },
  {
    code: 'overloaded',
    status: 503,
    when: 'a create (POST /asset, /asset/batch) while the service holds all it takes: creates not answered yet over CREATES_QUEUE_MB, or its memory over MEMORY_LIMIT_MB; nothing was written, retry; with retry-after',
  },
] as const satisfies readonly ErrorCodeEntry[];

type Entry = (typeof ERROR_CODES)[number];
/** Every code the API answers with. */
export type ErrorCodeName = Entry['code'];
/** The codes whose catalogue entry holds a message: a thrower may leave the message out. */
export type ErrorCodeWithMessage = Extract<Entry, { message: string }>['code'] & ClientErrorCode;
/** The codes of a validation error's fields. */
export type FieldErrorCode = Extract<Entry, { field: true }>['code'];
/** The codes an error answers with alone (a field's code comes in a validation error). */
export type ClientErrorCode = Exclude<ErrorCodeName, FieldErrorCode>;

const BY_CODE = new Map<string, ErrorCodeEntry>(ERROR_CODES.map((e) => [e.code, e]));

/** The catalogue's entry of a code (the type makes every code one of the catalogue's). */
export function errorEntry(code: ErrorCodeName): ErrorCodeEntry {
  return BY_CODE.get(code) as ErrorCodeEntry;
}

/** The code of a status no route names itself: `bad_request` or `internal_error` when none is listed. */
export function fallbackCode(status: number): ErrorCodeName {
  return ERROR_CODES.find((e) => e.status === status && 'fallback' in e)?.code ?? (status >= 500 ? 'internal_error' : 'bad_request');
}
