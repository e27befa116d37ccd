// The HTTP latency histogram (src/http/request-latency.ts) against prom-client's own Histogram fed the
// same observations: the registry prints the same lines (bucket bounds, cumulated counts, sums, label
// order), whatever the order the series first appeared in.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry, type Metric } from 'prom-client';
import { RequestLatency } from '../../src/http/request-latency.js';

const NAME = 'mintworks_http_request_duration_seconds';
const HELP = 'HTTP request latency by route template and status';
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** [method, route, status, seconds]: bounds hit exactly, between, above the last, and series interleaved. */
const OBSERVATIONS: [string, string, number, number][] = [
  ['GET', '/v1/asset/:uid', 200, 0.005],
  ['POST', '/v1/asset', 201, 0.0123],
  ['GET', '/v1/asset/:uid', 404, 0.0009],
  ['GET', '/v1/asset/:uid', 200, 0.0051],
  ['POST', '/v1/asset', 201, 3.7],
  ['POST', '/v1/asset', 503, 0.25],
  ['GET', 'unmatched', 404, 0.1],
  ['GET', '/v1/asset/:uid', 200, 1],
];

const sortedLines = (text: string) => text.trim().split('\n').sort();

describe('the HTTP latency histogram', () => {
  it("prints what prom-client's Histogram prints for the same observations", async () => {
    const reference = new Registry();
    const histogram = new Histogram({ name: NAME, help: HELP, labelNames: ['method', 'route', 'status'] as const, buckets: BUCKETS, registers: [reference] });
    const ours = new Registry();
    const latency = new RequestLatency(NAME, HELP, BUCKETS);
    ours.registerMetric(latency as unknown as Metric);
    for (const [method, route, status, seconds] of OBSERVATIONS) {
      histogram.observe({ method, route, status: String(status) }, seconds);
      latency.observe(method, route, status, seconds);
    }
    const expected = await reference.metrics();
    const got = await ours.metrics();
    assert.deepEqual(sortedLines(got), sortedLines(expected));
    // Each series' lines in order, as a scraper reads them (buckets by bound, then sum and count).
    assert.match(
      got,
      /_bucket\{le="0.005",method="GET",route="\/v1\/asset\/:uid",status="200"\} 1\n.*_bucket\{le="0.01",method="GET",route="\/v1\/asset\/:uid",status="200"\} 2\n/,
    );
    assert.match(
      got,
      /_bucket\{le="\+Inf",method="POST",route="\/v1\/asset",status="201"\} 2\n.*_sum\{method="POST",route="\/v1\/asset",status="201"\} 3\.7123\d*\n.*_count\{method="POST",route="\/v1\/asset",status="201"\} 2\n/,
    );
  });

  it('starts again from nothing after a reset', async () => {
    const latency = new RequestLatency(NAME, HELP, BUCKETS);
    latency.observe('GET', '/health', 200, 0.001);
    latency.reset();
    assert.deepEqual(latency.get().values, []);
  });
});
