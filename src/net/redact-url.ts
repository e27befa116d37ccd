// How a URL appears in a log line or an error message: its origin, and only whether it has a path and a
// query. Webhook and alert URLs often carry their secret there (Slack and Discord keep it in the path,
// others in a `token=` query), and credentials in the userinfo are dropped with it.
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(not a valid URL)';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `${u.protocol}(redacted)`;
  const path = u.pathname.length > 1 ? '/<redacted>' : '/';
  return `${u.origin}${path}${u.search ? '?<redacted>' : ''}`;
}
