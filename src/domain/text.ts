// Text both databases store unchanged: PostgreSQL refuses NUL in text ("invalid byte sequence for
// encoding UTF8: 0x00") and an unpaired UTF-16 surrogate cannot be encoded as UTF-8 at all (it is
// silently replaced). Every string that reaches a query is checked with this first, so SQLite and
// PostgreSQL answer the same: request fields, cursors (what they decode to), credentials.

export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && (s as string & { isWellFormed(): boolean }).isWellFormed();
}

export const STORABLE_TEXT_MESSAGE = 'Must not contain NUL characters or unpaired UTF-16 surrogates.';

/** Characters that show nothing: spaces, controls, and the default-ignorable ones (zero-width space,
 * joiners, soft hyphen, variation selectors, Hangul fillers), and the blank braille pattern. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Cc}\u2800]/gu;

/** True when nothing of `s` would be seen: a name made only of invisible characters is no name. */
export function isInvisible(s: string): boolean {
  return s.replace(INVISIBLE, '') === '';
}

/**
 * The form in which names are compared for uniqueness: Unicode NFC, so "Café" typed as one code point
 * or as "e" plus a combining accent is the same name. Names are stored as given.
 */
export function nameKey(s: string): string {
  return s.normalize('NFC');
}

/** The spellings under which a stored name equal to `s` after NFC may have been stored as given. */
export function nameSpellings(s: string): string[] {
  return [...new Set([s, s.normalize('NFC'), s.normalize('NFD')])];
}
