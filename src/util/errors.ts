// The error envelope of the API (docs/api.md, Errors). Every failure the API reports is an ApiError; anything else is a 500.
import { type ClientErrorCode, type ErrorCodeName, type ErrorCodeWithMessage, type FieldErrorCode, errorEntry } from '../domain/error-codes.js';

export type ErrorType = 'client_error' | 'validation_error' | 'server_error';

export const DATABASE_UNAVAILABLE = 'database_unavailable' satisfies ErrorCodeName;

export interface ErrorDetail {
  code: ErrorCodeName;
  field_name?: string;
  message: string; // always the last key: one SDK reads it positionally
}

/** One field of a validation error. */
export interface FieldError {
  field: string;
  code: FieldErrorCode;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly details: ErrorDetail[],
  ) {
    super(details.map((d) => d.message).join('; '));
  }

  /**
   * The error of a catalogued code: its status comes from the catalogue (src/domain/error-codes.ts), and
   * so do its message and field when the code has them and none is given here.
   */
  static of(code: ErrorCodeWithMessage, message?: string, field?: string): ApiError;
  static of(code: ClientErrorCode, message: string, field?: string): ApiError;
  static of(code: ClientErrorCode, message?: string, field?: string): ApiError {
    const entry = errorEntry(code);
    return new ApiError(entry.status, typeOf(entry.status), [detail(code, message ?? (entry.message as string), field ?? entry.fieldName)]);
  }
  static validation(fields: FieldError[]): ApiError {
    return new ApiError(
      400,
      'validation_error',
      fields.map((f) => detail(f.code, f.message, f.field)),
    );
  }
  /** The database could not be reached or used: nothing of the request was written (or its outcome is
   * unknown and a retry with the same Idempotency-Key answers it). Answered with Retry-After. */
  static databaseUnavailable(): ApiError {
    return ApiError.of(DATABASE_UNAVAILABLE);
  }
  static notFound(resource: string): ApiError {
    return ApiError.of('not_found', `${resource} not found.`);
  }

  toBody(): object {
    const d = this.details.length === 1 ? this.details[0] : this.details;
    return { success: false, error: { type: this.type, detail: d } };
  }
}

const typeOf = (status: number): ErrorType => (status >= 500 ? 'server_error' : 'client_error');

export function detail(code: ErrorCodeName, message: string, field?: string): ErrorDetail {
  // Build in key order code, field_name, message.
  return field === undefined ? { code, message } : { code, field_name: field, message };
}

/** The envelope of a catalogued code, for answers sent without throwing (the type follows the code's status). */
export function errorBody(code: ErrorCodeName, message: string): object {
  return { success: false, error: { type: typeOf(errorEntry(code).status), detail: { code, message } } };
}
