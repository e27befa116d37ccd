// How numbers and times read in the console: exact decimals with thousands separators (never an
// exponent: an amount of 10^-18 reads 0.000000000000000001), amounts with their unit, wei as the
// chain's currency, and times relative to now (the full time is on hover, see ui.tsx's Time).

/** An exact decimal from the API (a string, or a JSON number) as text: separators, no exponent. */
export function decimal(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  let text = typeof value === 'number' ? plain(value) : value.trim();
  const negative = text.startsWith('-');
  if (negative) text = text.slice(1);
  const [int, frac = ''] = text.split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${frac ? `.${frac}` : ''}`;
}

/** A JS number without an exponent (the shortest decimal that reads back as it). */
function plain(n: number): string {
  const s = String(n);
  if (!/e/i.test(s)) return s;
  const [mant, exp] = s.split(/e/i);
  const e = Number(exp);
  const [i, f = ''] = mant.replace('-', '').split('.');
  const digits = i + f;
  const point = i.length + e;
  const body =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (n < 0 ? '-' : '') + body.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
}

/** An amount with its unit: `1,000,000 GEM`. */
export const amount = (value: string | number | null | undefined, unit: string) => (value === null || value === undefined ? '—' : `${decimal(value)} ${unit}`);

/** Wei (a decimal string) in the native currency, exact: `0.014729 ETH` (or rounded up to `decimals`). */
export function wei(value: string | null | undefined, currency = 'ETH', decimals?: number): string {
  if (value === null || value === undefined || value.startsWith('-')) return '—';
  let units = BigInt(value);
  if (decimals !== undefined) {
    const step = 10n ** BigInt(18 - decimals);
    units = ((units + step - 1n) / step) * step;
  }
  const whole = units / 10n ** 18n;
  const frac = (units % 10n ** 18n).toString().padStart(18, '0').replace(/0+$/, '');
  return `${decimal(frac ? `${whole}.${frac}` : `${whole}`)} ${currency}`;
}

/** An integer count with separators. */
export const count = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

/** How long ago (or from now) a time is, in words: `3 min ago`, `in 2 h`, `5 days ago`. */
export function relative(iso: string, now = Date.now()): string {
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  const a = Math.abs(s);
  const [n, unit] =
    a < 45
      ? [0, '']
      : a < 3600
        ? [Math.round(a / 60), 'min']
        : a < 86_400
          ? [Math.round(a / 3600), 'h']
          : a < 30 * 86_400
            ? [Math.round(a / 86_400), n1(a / 86_400) ? 'day' : 'days']
            : [0, 'date'];
  if (unit === '') return 'just now';
  if (unit === 'date') return new Date(iso).toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' });
  return s >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}
const n1 = (days: number) => Math.round(days) === 1;
