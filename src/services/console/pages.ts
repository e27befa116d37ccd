// The console's lists are the API's keyset pages (services/requests/pages.ts) with the cursor named as
// the browser contract names it.
import type { KeyKind } from '../requests/pages.js';
import type { Page } from './types.js';

/** Where the console's good cursors come from, for the error a made-up one gets. */
export const HINT = 'take next_cursor from the previous page';
export const NEWEST = (t: string) => ({ columns: [`${t}.created_at`, `${t}.uid`], kinds: ['s', 's'] as KeyKind[], hint: HINT });

/** The console's page: the API's keyset page with its cursor named `next_cursor` (the browser contract). */
export function consolePage<T>(p: { items: T[]; next: string | null }): Page<T> {
  return { items: p.items, next_cursor: p.next };
}
