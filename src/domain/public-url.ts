// What a public URL may be (PUBLIC_URL, `mintworks config set public-url`): the origin clients reach the
// installation at and an optional clean path under which it is served. Token URIs on chain, links and
// the console's origin are built from it, so anything else (credentials, a query, a fragment, spaces,
// `..`) would end up on chain or in every link.

/** Why `value` is not a public URL, or null when it is one. */
export function publicUrlProblem(value: string): string | null {
  if ([...value].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f || /\s/.test(c))) return 'it contains spaces or control characters';
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'it is not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'only http and https are allowed';
  if (u.username || u.password || value.includes('@')) return 'it carries credentials (user:password@)';
  if (u.search || value.includes('?')) return 'it has a query (?…)';
  if (u.hash || value.includes('#')) return 'it has a fragment (#…)';
  // The parser folds `.` and `..` away: the text as given must not have them.
  if (/\/\.\.?(\/|$)/.test(value.replace(/^[a-z]+:\/\//i, ''))) return 'its path has . or .. segments';
  const path = u.pathname.replace(/\/+$/, '');
  if (path && !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) return 'its path may hold only letters, digits and . _ ~ - between slashes';
  return null;
}

/** The URL as recorded: trailing slashes removed. */
export const normalPublicUrl = (value: string) => value.replace(/\/+$/, '');
