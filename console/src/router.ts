// A small router over the History API: every page has its own URL under /console, links are plain
// <a href> (open in a new tab works), and the back button returns to the previous page.
import { useEffect, useState } from 'preact/hooks';

type Listener = () => void;
const listeners = new Set<Listener>();
const notify = () => listeners.forEach((fn) => fn());
window.addEventListener('popstate', notify);

export function navigate(href: string, opts: { replace?: boolean } = {}): void {
  if (href === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  notify();
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

export function useLocation(): Location {
  const [, setTick] = useState(0);
  useEffect(() => {
    const fn = () => setTick((t) => t + 1);
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return { path: location.pathname.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) };
}

/** Same-origin clicks on links under /console go through the router instead of loading the page again. */
export function interceptLinks(root: HTMLElement): () => void {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith('/console')) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  };
  root.addEventListener('click', onClick);
  return () => root.removeEventListener('click', onClick);
}

/** A URL for the current page with some query parameters changed (undefined/'' removes one). */
export function withQuery(loc: Location, changes: Record<string, string | undefined>): string {
  const q = new URLSearchParams(loc.query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  return `${location.pathname}${s ? `?${s}` : ''}`;
}
