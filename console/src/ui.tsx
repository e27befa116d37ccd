// Building blocks of the pages: tables, pagers, status badges, forms, copyable values.
import { relative } from './format';
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiFailure } from './api';
import { navigate, withQuery, type Location } from './router';

/** A time as how long ago it was; the full time (local, and the ISO text) on hover. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const full = new Date(iso).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return (
    <time dateTime={iso} title={`${full} (${iso})`} class="nowrap">
      {relative(iso)}
    </time>
  );
}

const STATUS_LABEL: Record<string, string> = { not_minted: 'not minted' };
const STATUS_TONE: Record<string, string> = {
  ok: 'ok',
  mined: 'ok',
  sent: 'wait',
  signed: 'wait',
  reverted: 'bad',
  unreachable: 'bad',
  'chain unreachable': 'bad',
  'relayer balance low': 'bad',
  minted: 'ok',
  deployed: 'ok',
  delivered: 'ok',
  done: 'ok',
  not_minted: 'wait',
  pending: 'wait',
  deploying: 'wait',
  transferring: 'wait',
  burning: 'wait',
  requested: 'wait',
  burned: 'off',
  expired: 'off',
  disabled: 'off',
  cancelled: 'off',
  failed: 'bad',
  up: 'ok',
  degraded: 'wait',
  rate_limited: 'wait',
  down: 'bad',
  stuck: 'bad',
  cancelling: 'wait',
  'awaiting evidence': 'wait',
};

export function Status({ value, title }: { value: string; title?: string | null }) {
  return (
    <span class={`badge ${STATUS_TONE[value] ?? ''}`} title={title ?? undefined} data-status={value}>
      {STATUS_LABEL[value] ?? value}
    </span>
  );
}

export function Mono({ children }: { children: ComponentChildren }) {
  return <code class="mono">{children}</code>;
}

export function Short({ value, keep = 6 }: { value: string | null | undefined; keep?: number }) {
  if (!value) return <span class="muted">—</span>;
  const short = value.length > keep * 2 + 3 ? `${value.slice(0, keep + 2)}…${value.slice(-keep)}` : value;
  return (
    <code class="mono" title={value}>
      {short}
    </code>
  );
}

export function ErrorBox({ error }: { error: ApiFailure | Error | undefined | null }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      {error.message}
    </div>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="muted" role="status">
      {what}…
    </p>
  );
}

/** Copies a value to the clipboard; the button says what it copies. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setDone(true);
      setTimeout(() => setDone(false), 1500);
    } catch {
      setDone(false);
    }
  };
  return (
    <button type="button" class="small" onClick={copy} aria-label={`Copy ${label}`}>
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

/** A value shown once (a new secret): select-all text plus a copy button. */
export function Secret({ label, value }: { label: string; value: string }) {
  const id = `secret-${label.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <div class="secret">
      <label for={id}>{label}</label>
      <div class="row">
        <input id={id} class="mono" readOnly value={value} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
        <CopyButton value={value} label={label} />
      </div>
    </div>
  );
}

export function Field(props: { label: string; id: string; error?: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && (
        <small id={`${props.id}-hint`} class="muted">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={`${props.id}-error`} class="field-error">
          {props.error}
        </small>
      )}
    </div>
  );
}

export interface Column<T> {
  title: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

export function Table<T>({
  caption,
  columns,
  rows,
  rowKey,
  empty = 'Nothing yet.',
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty?: string;
}) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.class}>
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length} class="muted">
                {empty}
              </td>
            </tr>
          ) : (
            rows.map((r) => (
              <tr key={rowKey(r)} data-key={rowKey(r)}>
                {columns.map((c) => (
                  <td class={c.class}>{c.cell(r)}</td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Keyset paging: the first page, and the page after this one (the back button returns to earlier ones). */
export function Pager({ loc, next, param = 'after' }: { loc: Location; next: string | null | undefined; param?: string }) {
  const onFirst = !loc.query.get(param);
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={onFirst} onClick={() => navigate(withQuery(loc, { [param]: undefined }))}>
        First page
      </button>
      <button type="button" disabled={!next} onClick={() => next && navigate(withQuery(loc, { [param]: next }))}>
        Next page
      </button>
    </nav>
  );
}

/** Runs an action for a form: busy flag, the failure to show, and the result. */
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | undefined>(undefined);
  const run = async (...args: A): Promise<R | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await fn(...args);
    } catch (err) {
      setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: 'error', message: String(err) }]));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, setError };
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `sec-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section aria-labelledby={id} class="section">
      <div class="section-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function ExternalLink({ href, children }: { href: string | null | undefined; children: ComponentChildren }) {
  if (!href) return <span class="muted">—</span>;
  return (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  );
}

export const onInput = (set: (v: string) => void) => (e: Event) => set((e.currentTarget as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement).value);
