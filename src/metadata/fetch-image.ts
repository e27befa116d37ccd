// Fetching a user's image_url (store_image_on_ipfs: true). Every request goes through the SSRF guard of
// src/net/outbound.ts (scheme, resolved addresses at connect time, every redirect hop); this module only
// decides what a response means: an image to store, a failure worth retrying, or a permanent refusal.
import { OutboundBlockedError, outboundRequest, type OutboundPolicy, type OutboundResponse } from '../net/outbound.js';
import { mediaType, sniffImage, type ImageType } from './sniff.js';

export const IMAGE_FETCH_TIMEOUT_MS = 15_000;
export const IMAGE_MAX_REDIRECTS = 5;

/**
 * Why preparing an asset's metadata failed. `permanent`: retrying cannot help (404, not an image, too
 * large, refused address), so the asset fails now; otherwise the job queue retries with backoff and the
 * asset fails only once the attempts are used up.
 */
export class MetadataError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'MetadataError';
  }
}

export interface FetchedImage {
  bytes: Buffer;
  contentType: ImageType;
  /** Where the bytes came from after redirects. */
  url: string;
}

// Statuses a later attempt may turn into a success; every other non-2xx is the server's final word.
const TRANSIENT_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** What a response means (pure). */
export function classifyImageResponse(
  res: Pick<OutboundResponse, 'status' | 'headers' | 'body' | 'truncated' | 'url'>,
  maxBytes: number,
): FetchedImage | MetadataError {
  if (res.status >= 300 && res.status < 400)
    return new MetadataError(`image_url redirected more than ${IMAGE_MAX_REDIRECTS} times (or without a Location)`, true);
  if (res.status < 200 || res.status >= 300) {
    const transient = TRANSIENT_STATUS.has(res.status) || res.status >= 500;
    return new MetadataError(`image_url answered HTTP ${res.status}`, !transient);
  }
  if (res.truncated) return new MetadataError(`image is larger than the limit of ${maxBytes} bytes (IMAGE_MAX_BYTES)`, true);
  const declared = mediaType(res.headers['content-type']);
  if (!declared.startsWith('image/')) return new MetadataError(`image_url did not answer with an image (Content-Type: ${declared || 'none'})`, true);
  const sniffed = sniffImage(res.body);
  if (!sniffed) return new MetadataError(`image_url content is not a PNG, JPEG, GIF, WebP, AVIF or SVG image (Content-Type said ${declared})`, true);
  return { bytes: res.body, contentType: sniffed, url: res.url };
}

/** Network-level failures: the guard's refusal is permanent; timeouts, resets and DNS trouble may pass. */
export function classifyFetchError(err: unknown): MetadataError {
  if (err instanceof MetadataError) return err;
  if (err instanceof OutboundBlockedError) return new MetadataError(`image_url refused: ${err.reason}`, true);
  const e = err as NodeJS.ErrnoException;
  const detail = e?.code ? `${e.code}${e.message && !e.message.includes(e.code) ? ` ${e.message}` : ''}` : (e?.message ?? String(err));
  return new MetadataError(`image_url could not be fetched: ${detail}`, false);
}

export async function fetchImage(url: string, opts: { policy: OutboundPolicy; maxBytes: number; timeoutMs?: number }): Promise<FetchedImage> {
  let res: OutboundResponse;
  try {
    res = await outboundRequest(url, {
      method: 'GET',
      headers: { accept: 'image/avif,image/webp,image/png,image/jpeg,image/gif,image/svg+xml,image/*;q=0.8', 'user-agent': 'Mintworks image fetcher' },
      timeoutMs: opts.timeoutMs ?? IMAGE_FETCH_TIMEOUT_MS,
      maxBytes: opts.maxBytes,
      maxRedirects: IMAGE_MAX_REDIRECTS,
      policy: opts.policy,
    });
  } catch (err) {
    throw classifyFetchError(err);
  }
  const r = classifyImageResponse(res, opts.maxBytes);
  if (r instanceof MetadataError) throw r;
  return r;
}
