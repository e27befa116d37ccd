// The HTTP latency histogram (`mintworks_http_request_duration_seconds`), counted without allocating per
// request. prom-client's Histogram, even through a child per label set, turns every observation's labels
// into a checked object and a hash string: about a fiftieth of what the API's thread allocated per
// request, for a counter bump. Here a request finds its series through three maps (route, method,
// status) and adds to numbers; prom-client still writes the text at scrape time, from `get()`, in the
// same shape its own Histogram gives (test/unit/request-latency.test.ts compares the two).

interface Series {
  labels: { method: string; route: string; status: string };
  /** Observations per bucket: [i] those at most buckets[i] and above buckets[i - 1] (cumulated at scrape). */
  inBucket: Float64Array;
  sum: number;
  count: number;
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

export class RequestLatency {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** route → method → status → series. */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (!s) {
      s = { labels: { method, route, status: String(status) }, inBucket: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      byStatus.set(status, s);
    }
    let i = 0;
    while (i < this.buckets.length && seconds > this.buckets[i]) i++;
    if (i < this.buckets.length) s.inBucket[i]++;
    s.sum += seconds;
    s.count++;
  }

  /**
   * What prom-client's registry prints: the values and labels its Histogram's would have, each series'
   * lines in the same order (buckets by bound, then sum and count); the series by route, then method.
   */
  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    for (const byMethod of this.series.values())
      for (const byStatus of byMethod.values())
        for (const s of byStatus.values()) {
          let cumulated = 0;
          this.buckets.forEach((le, i) => {
            cumulated += s.inBucket[i];
            values.push({ labels: { le, ...s.labels }, value: cumulated, metricName: `${this.name}_bucket` });
          });
          values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
          values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
          values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
        }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
