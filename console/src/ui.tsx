// Building blocks of the pages: tables, pagers, status badges, forms, copyable values. Shared by every
// page (and by the pages to come): a page composes these rather than styling its own.
import { decimal, relative, wei } from './format';
import { ArrowIcon, CheckIcon, CopyIcon } from './icons';
import { Fragment, type ComponentChildren } from 'preact';
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

const shorten = (value: string, keep: number) => (value.length > keep * 2 + 3 ? `${value.slice(0, keep + 2)}…${value.slice(-keep)}` : value);

/**
 * An identifier (a uid, an address, a hash, an event id): cut to its ends when long, the whole value on
 * hover, a button that copies it; a link when `href` is given (an explorer's opens in a new tab).
 */
export function Uid({
  value,
  href,
  external = false,
  keep = 6,
  label = 'value',
}: {
  value: string | number | null | undefined;
  href?: string | null;
  external?: boolean;
  keep?: number;
  label?: string;
}) {
  if (value === null || value === undefined || value === '') return <span class="muted">—</span>;
  const text = String(value);
  const code = (
    <code class="mono" title={text}>
      {shorten(text, keep)}
    </code>
  );
  return (
    <span class="uid" data-uid={text}>
      {href ? (
        <a href={href} {...(external ? { target: '_blank', rel: 'noopener noreferrer' } : {})}>
          {code}
        </a>
      ) : (
        code
      )}
      <CopyButton value={text} label={`${label} ${text}`} icon />
    </span>
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

/** Copies a value to the clipboard; the button says what it copies (an icon alone when `icon`). */
export function CopyButton({ value, label, icon = false }: { value: string; label: string; icon?: boolean }) {
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
  if (icon)
    return (
      <button type="button" class={`icon-button${done ? ' done' : ''}`} onClick={copy} aria-label={`Copy ${label}`} title={done ? 'Copied' : 'Copy'}>
        {done ? <CheckIcon /> : <CopyIcon />}
      </button>
    );
  return (
    <button type="button" class="small" onClick={copy} aria-label={`Copy ${label}`}>
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

const ID_IN_TEXT = /((?<![\w.,/])(?:[1-9]\d{11}|0x[0-9a-f]{40,})(?![\w.,]))/i;

/** A sentence from the server ("token id 1 for user 816379099131") with each identifier in it a Uid. */
export function IdText({ text }: { text: string }) {
  return <>{text.split(ID_IN_TEXT).map((part, i) => (i % 2 === 1 ? <Uid key={i} value={part} label="id" /> : part))}</>;
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

/** A labelled input with its hint and error; `wide` takes two of a form's columns (a description, an address). */
export function Field(props: { label: string; id: string; error?: string; hint?: string; wide?: boolean; children: ComponentChildren }) {
  return (
    <div class={props.wide ? 'field wide' : 'field'}>
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
                  <td class={c.class} data-label={c.title}>
                    {c.cell(r)}
                  </td>
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

/** Where a change's old and new values sit in an entry's details (the audit log's). */
const CHANGES: [before: string, after: string, title: string][] = [
  ['previous', 'public_url', 'public url'],
  ['previous_key_id', 'key_id', 'key id'],
  ['from', 'to', 'custody'],
  ['recorded', 'on_chain', 'value'],
  ['old_relayers', 'new_relayers', 'relayers'],
  ['retired', 'active', 'relayers'],
  ['replaced_hash', 'cancel_hash', 'transaction'],
];

const label = (key: string) => key.replace(/_/g, ' ');
const LONG_ID = /^(0x[0-9a-f]{16,}|[0-9a-f-]{32,}|\d{9,})$/i;

/** One value of a details object: identifiers cut with a copy button, lists and objects nested. */
function Value({ value, name }: { value: unknown; name: string }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  if (typeof value === 'boolean') return <>{value ? 'yes' : 'no'}</>;
  if (typeof value === 'number') return <>{decimal(value)}</>;
  if (typeof value === 'string') {
    if (name.endsWith('_wei') && /^\d+$/.test(value)) return <>{wei(value)}</>;
    // An amount (a reward's supply) reads with separators; its unit is the reward's, named beside it.
    if (/(^|_)(amount|supply)$/.test(name) && /^\d+(\.\d+)?$/.test(value)) return <>{decimal(value)}</>;
    if (LONG_ID.test(value) || /(^|_)id$/.test(name)) return <Uid value={value} label={label(name)} />;
    return <>{value}</>;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return (
      <ul>
        {value.map((v, i) => (
          <li key={i}>
            <Value value={v} name={name} />
          </li>
        ))}
      </ul>
    );
  }
  return <KeyValues data={value as Record<string, unknown>} />;
}

/**
 * An object as key/value lines (the audit log's details): identifiers cut with a copy button, and
 * where the object holds a change's two sides, one line `before → after`.
 */
export function KeyValues({ data }: { data: Record<string, unknown> }) {
  const keys = Object.keys(data);
  if (keys.length === 0) return <span class="muted">—</span>;
  const pair = new Map<string, [after: string, title: string]>();
  for (const [before, after, title] of CHANGES) if (before in data && after in data) pair.set(before, [after, title]);
  const paired = new Set([...pair.values()].map(([after]) => after));
  return (
    <dl class="kv">
      {keys
        .filter((k) => !paired.has(k))
        .map((k) => {
          const [after, title] = pair.get(k) ?? [];
          return (
            <Fragment key={k}>
              <dt>{title ?? label(k)}</dt>
              <dd>
                {after !== undefined ? (
                  <span class="change" data-change={`${k}->${after}`}>
                    <span class="before">
                      <Value value={data[k]} name={k} />
                    </span>
                    <ArrowIcon />
                    <span class="after">
                      <Value value={data[after]} name={after} />
                    </span>
                  </span>
                ) : (
                  <Value value={data[k]} name={k} />
                )}
              </dd>
            </Fragment>
          );
        })}
    </dl>
  );
}
