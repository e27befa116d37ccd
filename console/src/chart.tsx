// The activity chart (uPlot, bundled): minted assets per bucket as bars, their sale prices as a line on
// a second axis. The same numbers are in a table below it for screen readers and keyboard users.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Activity } from '../../src/services/console/types';

/** Tick steps of the mints axis: whole numbers. */
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000];

export function ActivityChart({ activity, label }: { activity: Activity; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  const data: uPlot.AlignedData = [
    activity.points.map((p) => Date.parse(p.t) / 1000),
    activity.points.map((p) => p.mints),
    activity.points.map((p) => p.sales_usd),
  ];

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const styles = getComputedStyle(document.documentElement);
    const color = (name: string, fallback: string) => styles.getPropertyValue(name).trim() || fallback;
    const grid = { stroke: color('--grid', '#e5e7eb'), width: 1 };
    const axisStroke = color('--muted', '#6b7280');
    const opts: uPlot.Options = {
      width: Math.max(300, el.clientWidth),
      height: 240,
      // A legend of our own below the chart (uPlot's live one reads `TIME: --` until hovered).
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, mints: { range: (_u, _min, max) => [0, Math.max(1, max)] }, usd: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [
        { stroke: axisStroke, grid },
        // Whole mints only: no tick at half a mint.
        {
          scale: 'mints',
          label: 'Mints',
          size: 60,
          stroke: axisStroke,
          grid,
          incrs: WHOLE_STEPS,
          values: (_u, vals) => vals.map((v) => v.toLocaleString('en-US')),
        },
        {
          scale: 'usd',
          label: 'Sales (USD)',
          side: 1,
          size: 70,
          stroke: axisStroke,
          grid: { show: false },
          values: (_u, vals) => vals.map((v) => `$${v.toLocaleString('en-US')}`),
        },
      ],
      series: [
        {},
        {
          label: 'Mints',
          scale: 'mints',
          stroke: color('--accent', '#2f5bd3'),
          fill: color('--accent-fill', 'rgba(47,91,211,0.25)'),
          paths: uPlot.paths.bars!({ size: [0.7, 40] }),
          points: { show: false },
        },
        { label: 'Sales (USD)', scale: 'usd', stroke: color('--ok', '#15803d'), width: 2, value: (_u, v) => (v == null ? '—' : `$${v.toFixed(2)}`) },
      ],
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(300, el.clientWidth), height: 240 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [activity.range]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [activity]);

  const fmt = (t: string) =>
    activity.bucket === 'hour'
      ? new Date(t).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
      : new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  const totalMints = activity.points.reduce((n, p) => n + p.mints, 0);
  const totalSales = activity.points.reduce((n, p) => n + p.sales_usd, 0);

  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={`${label}: ${totalMints} mints, $${totalSales.toFixed(2)} in sales`} />
      <ul class="legend">
        <li>
          <span class="swatch mints" aria-hidden="true" /> Mints: {totalMints.toLocaleString('en-US')}
        </li>
        <li>
          <span class="swatch sales" aria-hidden="true" /> Sales: ${totalSales.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}
        </li>
      </ul>
      <figcaption class="muted">
        {totalMints} mints and ${totalSales.toFixed(2)} in sales ({activity.range === '24h' ? 'per hour, last 24 hours' : 'per day, last 30 days'}), by the
        assets' creation time.
      </figcaption>
      <details>
        <summary>Show the numbers</summary>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">{label}</caption>
            <thead>
              <tr>
                <th scope="col">{activity.bucket === 'hour' ? 'Hour' : 'Day'}</th>
                <th scope="col">Mints</th>
                <th scope="col">Sales (USD)</th>
              </tr>
            </thead>
            <tbody>
              {activity.points.map((p) => (
                <tr key={p.t}>
                  <td>{fmt(p.t)}</td>
                  <td>{p.mints}</td>
                  <td>{p.sales_usd.toFixed(2)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
