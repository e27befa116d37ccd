// The console's JSON API (/console/api), typed by src/services/console/types.ts. Failures arrive in the API's
// error envelope and become ApiFailure; a 401 means the session ended, and the app shows the sign-in.

export interface ErrorDetail {
  code: string;
  field_name?: string;
  message: string;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly details: ErrorDetail[],
  ) {
    super(details.map((d) => (d.field_name ? `${d.field_name}: ${d.message}` : d.message)).join(' '));
  }
  get code(): string {
    return this.details[0]?.code ?? 'error';
  }
  /** The message for one form field, if the server named it. */
  field(name: string): string | undefined {
    return this.details.find((d) => d.field_name === name)?.message;
  }
}

type Listener = () => void;
const signedOutListeners = new Set<Listener>();

/** Called when a request finds the session gone (signed out elsewhere, expired). */
export function onSignedOut(fn: Listener): () => void {
  signedOutListeners.add(fn);
  return () => signedOutListeners.delete(fn);
}

export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/console/api${path}`, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiFailure(0, [{ code: 'network', message: 'The service cannot be reached. Is it running?' }]);
  }
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.ok && json?.success) return json.data as T;
  const d = json?.error?.detail;
  const details: ErrorDetail[] = Array.isArray(d) ? d : d ? [d] : [{ code: 'http_' + res.status, message: `Request failed (${res.status}).` }];
  if (res.status === 401 && path !== '/session') for (const fn of signedOutListeners) fn();
  throw new ApiFailure(res.status, details);
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);

/** A query string from the defined, non-empty values. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}
