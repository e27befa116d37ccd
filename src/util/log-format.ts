// Human-readable log lines for a terminal (LOG_FORMAT=pretty, the default when stdout is a TTY):
//   12:30:05.123 INFO  http  request  method=GET url=/v1/user/123 status=200 ms=3
// pino still builds its JSON line (with every redaction applied); this only reformats it, so what is
// hidden in JSON is hidden here too.

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'component', 'thread', 'v']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

function time(t: unknown): string {
  const d = new Date(typeof t === 'number' ? t : Date.now());
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** One pino JSON line as one readable line (an error's stack follows on its own lines). */
export function prettyLine(json: string, color = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json);
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof o.level === 'number' ? o.level : 30;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const where = [o.thread, o.component].filter((x) => typeof x === 'string').join('/');
  let stack = '';
  const fields: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (OMIT.has(k)) continue;
    if (k === 'err' && v && typeof v === 'object') {
      const e = v as { message?: string; stack?: string };
      fields.push(`err=${value(e.message ?? '')}`);
      if (e.stack) stack = `\n    ${e.stack.split('\n').join('\n    ')}`;
      continue;
    }
    fields.push(`${k}=${value(v)}`);
  }
  const lvl = color ? `\x1b[${COLORS[level] ?? '0'}m${name}\x1b[0m` : name;
  const parts = [time(o.time), lvl, where && (color ? `\x1b[90m${where}\x1b[0m` : where), String(o.msg ?? ''), fields.join(' ')].filter(Boolean);
  return `${parts.join('  ')}${stack}\n`;
}

/** A pino destination that writes pretty lines to `out` (synchronously, like pino's own default). */
export function prettyDestination(out: NodeJS.WriteStream = process.stdout): { write(line: string): boolean } {
  const color = !!out.isTTY && !process.env.NO_COLOR;
  return { write: (line: string) => out.write(prettyLine(line, color)) };
}
