// The plain HTML page that routes outside the API show a browser (the front door, the explorer).
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** A browser asks for a page; scripts get JSON. */
export const wantsHtml = (accept: string | undefined) => /\btext\/html\b/i.test(accept ?? '');

const STYLE =
  'body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:56rem;padding:0 1rem;color:#1b1b1f}th{text-align:left;padding-right:1.5rem;vertical-align:top;color:#555;font-weight:500}td,th{padding-bottom:.4rem}code{word-break:break-all}p{color:#555}';

/**
 * The Content-Security-Policy of these pages: nothing but their own style sheet (by its hash). Some of
 * what they show comes from the chain (a token URI, any contract's data): were it ever to slip past
 * the escaping, it could still run nothing, load nothing, and send no form anywhere.
 */
export const PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

/** Sends `html` (made by `page`) with its security headers. */
export function sendHtml(reply: FastifyReply, html: string): FastifyReply {
  return reply.header('content-security-policy', PAGE_CSP).header('x-content-type-options', 'nosniff').type('text/html; charset=utf-8').send(html);
}

/** A small self-contained page (no script, no external resource) for a browser. */
export function page(title: string, rows: [label: string, text: string | null, href?: string][], note = ''): string {
  const cell = (v: string | null, href?: string) =>
    v === null ? '<em>none</em>' : href ? `<a href="${escapeHtml(href)}"><code>${escapeHtml(v)}</code></a>` : `<code>${escapeHtml(v)}</code>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title === 'Mintworks' ? title : `${title} · Mintworks`)}</title>
<style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1><table>${rows.map(([k, v, href]) => `<tr><th>${escapeHtml(k)}</th><td>${cell(v, href)}</td></tr>`).join('')}</table>${note ? `<p>${note}</p>` : ''}</body></html>`;
}
