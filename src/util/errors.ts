// The error envelope of the API (docs/api.md, Errors). Every failure the API reports is an ApiError; anything else is a 500.
export type ErrorType = 'client_error' | 'validation_error' | 'server_error';

export const DATABASE_UNAVAILABLE = 'database_unavailable';

export interface ErrorDetail {
  code: string;
  field_name?: string;
  message: string; // always the last key: one SDK reads it positionally
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly details: ErrorDetail[],
  ) {
    super(details.map((d) => d.message).join('; '));
  }

  static client(status: number, code: string, message: string, field?: string): ApiError {
    return new ApiError(status, 'client_error', [detail(code, message, field)]);
  }
  static validation(fields: { field: string; code: string; message: string }[]): ApiError {
    return new ApiError(
      400,
      'validation_error',
      fields.map((f) => detail(f.code, f.message, f.field)),
    );
  }
  /** The database could not be reached or used: nothing of the request was written (or its outcome is
   * unknown and a retry with the same Idempotency-Key answers it). Answered with Retry-After. */
  static databaseUnavailable(): ApiError {
    return new ApiError(503, 'server_error', [
      detail(DATABASE_UNAVAILABLE, 'The database is unavailable right now: retry shortly (with the same Idempotency-Key).'),
    ]);
  }
  static notFound(resource: string): ApiError {
    return ApiError.client(404, 'not_found', `${resource} not found.`);
  }

  toBody(): object {
    const d = this.details.length === 1 ? this.details[0] : this.details;
    return { success: false, error: { type: this.type, detail: d } };
  }
}

export function detail(code: string, message: string, field?: string): ErrorDetail {
  // Build in key order code, field_name, message.
  return field === undefined ? { code, message } : { code, field_name: field, message };
}

export function errorBody(status: number, code: string, message: string): object {
  const type: ErrorType = status >= 500 ? 'server_error' : 'client_error';
  return { success: false, error: { type, detail: { code, message } } };
}
