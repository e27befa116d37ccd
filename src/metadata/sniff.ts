// Content types from bytes (pure). A fetched image must BE an image, whatever its server claims, and what
// the gateway and the file store serve is typed from the stored bytes, never from anything a user sent.

export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'image/avif' | 'image/svg+xml';

const startsWith = (b: Uint8Array, sig: number[], at = 0): boolean => b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);
const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

/** The image format of these bytes by their magic numbers, or null when they are no image we accept. */
export function sniffImage(b: Uint8Array): ImageType | null {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8)) return 'image/webp';
  if (isAvif(b)) return 'image/avif';
  if (isSvg(b)) return 'image/svg+xml';
  return null;
}

/** ISO-BMFF `ftyp` box whose major or a compatible brand is avif (still) or avis (sequence). */
function isAvif(b: Uint8Array): boolean {
  if (!startsWith(b, ascii('ftyp'), 4)) return false;
  const boxSize = ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0;
  const end = Math.min(boxSize, b.length);
  if (boxSize < 16) return false;
  const brand = (at: number) => String.fromCharCode(b[at], b[at + 1], b[at + 2], b[at + 3]);
  if (brand(8) === 'avif' || brand(8) === 'avis') return true;
  for (let at = 16; at + 4 <= end; at += 4) if (brand(at) === 'avif' || brand(at) === 'avis') return true;
  return false;
}

/**
 * SVG is XML text: after an optional BOM, whitespace, XML declaration, comments and a doctype, the root
 * element must be <svg>. Only the head of the document is looked at (an SVG opens with its root).
 */
function isSvg(b: Uint8Array): boolean {
  let s = Buffer.from(b.subarray(0, 4096)).toString('utf8');
  if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
  for (;;) {
    s = s.replace(/^\s+/, '');
    if (s.startsWith('<?')) {
      const end = s.indexOf('?>');
      if (end < 0) return false;
      s = s.slice(end + 2);
    } else if (s.startsWith('<!--')) {
      const end = s.indexOf('-->');
      if (end < 0) return false;
      s = s.slice(end + 3);
    } else if (/^<!DOCTYPE\s+svg[\s>]/i.test(s)) {
      const end = s.indexOf('>');
      if (end < 0) return false;
      s = s.slice(end + 1);
    } else {
      return /^<svg[\s>/]/.test(s);
    }
  }
}

/** The media type of a Content-Type header value, lower case, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

/** Type to serve stored bytes with: an accepted image type, JSON for metadata documents, else binary. */
export function sniffContentType(b: Uint8Array): string {
  const image = sniffImage(b);
  if (image) return image;
  if (looksLikeJsonDocument(b)) return 'application/json';
  return 'application/octet-stream';
}

function looksLikeJsonDocument(b: Uint8Array): boolean {
  if (b.length === 0 || b.length > 1024 * 1024) return false;
  const s = Buffer.from(b).toString('utf8').trim();
  if (!s.startsWith('{') && !s.startsWith('[')) return false;
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}
