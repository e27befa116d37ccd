// A JSON-RPC endpoint on a bad day, for tests: a real HTTP server in front of a real node that forwards
// every call and injects what hosted providers do. Faults are drawn from a seeded generator, so a run
// can be repeated, and counted, so a test can check they happened:
//   latency      a delay before each answer (uniform between two bounds)
//   429          an answer of HTTP 429 with Retry-After, without forwarding
//   hang         no answer: the connection is held, then closed (nothing forwarded)
//   lost         eth_sendRawTransaction forwarded to the node, then the answer dropped (connection closed)
//   dropped      eth_sendRawTransaction forwarded and answered, then the node told to forget the transaction
//   down         the port closed: connections are refused
// and what a provider's load balancer over backends that lag behind one another does:
//   receipt miss eth_getTransactionReceipt answered `null` for a transaction the node has mined
//   stale        eth_getTransactionCount, eth_blockNumber and eth_getBlockByNumber("latest") answered
//                with what the node said of the same call some seconds ago
// The plan can be changed at any time (`plan`); `down()`/`up()` close and reopen the same port.
import http from 'node:http';
import type net from 'node:net';

export interface FaultPlan {
  /** [min, max] ms before each answer. */
  latencyMs?: [number, number];
  /** Share of calls answered 429 (0..1). */
  rate429?: number;
  /** Retry-After of those answers, in seconds (omitted when undefined). */
  retryAfterS?: number;
  /** Share of calls that hang (0..1), for `hangMs` (then the connection is closed). */
  hangRate?: number;
  hangMs?: number;
  /** Share of eth_sendRawTransaction answers lost after the node got the transaction (0..1). */
  loseSendRate?: number;
  /** Share of sent transactions the node is told to drop after answering (0..1). */
  dropTxRate?: number;
  /** Share of calls answered HTTP 503 without forwarding (0..1). */
  rate5xx?: number;
  /** Only these methods get the faults above (all when undefined). */
  methods?: string[];
  /** Share of eth_getTransactionReceipt answered null although the node has the receipt (0..1). */
  receiptMissRate?: number;
  /** Share of head and account-nonce reads answered as the node answered them `staleMs` earlier (0..1). */
  staleRate?: number;
  /** How far behind a stale answer is (default 3000 ms). */
  staleMs?: number;
}

export interface FaultCounts {
  requests: number;
  forwarded: number;
  r429: number;
  r5xx: number;
  hangs: number;
  lostSends: number;
  droppedTxs: number;
  sends: number;
  receiptMisses: number;
  staleAnswers: number;
}

/** mulberry32: small, seeded, good enough to spread faults. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class RpcFaultProxy {
  plan: FaultPlan;
  readonly counts: FaultCounts = {
    requests: 0,
    forwarded: 0,
    r429: 0,
    r5xx: 0,
    hangs: 0,
    lostSends: 0,
    droppedTxs: 0,
    sends: 0,
    receiptMisses: 0,
    staleAnswers: 0,
  };
  /** Every request as it was answered: when, which method, and how (`forwarded` or the fault). */
  readonly log: {
    at: number;
    method: string;
    outcome: 'forwarded' | '429' | '5xx' | 'hang' | 'lost' | 'dropped' | 'bad gateway' | 'receipt miss' | 'stale';
  }[] = [];
  /** What the node answered to the calls a stale backend may repeat, by call, oldest first. */
  private readonly history = new Map<string, { at: number; result: unknown }[]>();
  private server: http.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private readonly random: () => number;
  private port = 0;

  private constructor(
    readonly target: string,
    plan: FaultPlan,
    seed: number,
    /** The node's method that forgets a pooled transaction: anvil_dropTransaction or hardhat_dropTransaction. */
    private readonly dropMethod: string,
  ) {
    this.plan = plan;
    this.random = seeded(seed);
  }

  static async start(target: string, plan: FaultPlan = {}, opts: { seed?: number; port?: number; dropMethod?: string } = {}): Promise<RpcFaultProxy> {
    const p = new RpcFaultProxy(target, plan, opts.seed ?? 1, opts.dropMethod ?? 'anvil_dropTransaction');
    p.port = opts.port ?? 0;
    await p.up();
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens (again) on the proxy's port. */
  async up(): Promise<void> {
    if (this.server) return;
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5000;
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Closes the port and every open connection: calls are refused until `up()`. */
  async down(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async stop(): Promise<void> {
    await this.down();
  }

  private chance(rate: number | undefined): boolean {
    return !!rate && this.random() < rate;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    this.counts.requests++;
    let body: { method?: string; params?: unknown[]; id?: unknown } | unknown[];
    try {
      body = JSON.parse(text);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const method = Array.isArray(body) ? 'batch' : (body.method ?? '');
    const plan = this.plan;
    const faulty = !plan.methods || plan.methods.includes(method);
    const [lo, hi] = plan.latencyMs ?? [0, 0];
    if (hi > 0) await sleep(lo + this.random() * (hi - lo));

    if (faulty && this.chance(plan.hangRate)) {
      this.counts.hangs++;
      this.log.push({ at: Date.now(), method, outcome: 'hang' });
      await sleep(plan.hangMs ?? 8000);
      req.socket.destroy();
      return;
    }
    if (faulty && this.chance(plan.rate429)) {
      this.counts.r429++;
      this.log.push({ at: Date.now(), method, outcome: '429' });
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (plan.retryAfterS !== undefined) headers['retry-after'] = String(plan.retryAfterS);
      res
        .writeHead(429, headers)
        .end(JSON.stringify({ jsonrpc: '2.0', id: Array.isArray(body) ? null : body.id, error: { code: 429, message: 'Too Many Requests' } }));
      return;
    }
    if (faulty && this.chance(plan.rate5xx)) {
      this.counts.r5xx++;
      this.log.push({ at: Date.now(), method, outcome: '5xx' });
      res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
      return;
    }

    let answer: { status: number; body: string };
    try {
      answer = await this.forward(text);
    } catch {
      this.log.push({ at: Date.now(), method, outcome: 'bad gateway' });
      res.writeHead(502, { 'content-type': 'text/plain' }).end('Bad Gateway: the node did not answer');
      return;
    }
    this.counts.forwarded++;
    if (method === 'eth_sendRawTransaction') {
      this.counts.sends++;
      if (faulty && this.chance(plan.loseSendRate)) {
        // The node has the transaction; the caller never hears it.
        this.counts.lostSends++;
        this.log.push({ at: Date.now(), method, outcome: 'lost' });
        req.socket.destroy();
        return;
      }
      const hash = (JSON.parse(answer.body) as { result?: string }).result;
      if (hash && faulty && this.chance(plan.dropTxRate)) {
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
        this.counts.droppedTxs++;
        this.log.push({ at: Date.now(), method, outcome: 'dropped' });
        await this.forward(JSON.stringify({ jsonrpc: '2.0', id: 1, method: this.dropMethod, params: [hash] })).catch(() => undefined);
        return;
      }
    }
    if (!Array.isArray(body) && answer.status === 200) {
      const lagged = this.lagging(body, answer.body);
      if (lagged) {
        this.log.push({ at: Date.now(), method, outcome: lagged.outcome });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: lagged.result }));
        return;
      }
    }
    this.log.push({ at: Date.now(), method, outcome: 'forwarded' });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  }

  /**
   * A backend behind the node: a receipt it has not seen yet (null), or the head or an account's nonce
   * as the node answered them `staleMs` ago. Every answer of those calls is remembered for the latter.
   */
  private lagging(call: { method?: string; params?: unknown[] }, answered: string): { outcome: 'receipt miss' | 'stale'; result: unknown } | null {
    const plan = this.plan;
    const result = (JSON.parse(answered) as { result?: unknown }).result;
    if (result === undefined) return null;
    if (call.method === 'eth_getTransactionReceipt') {
      if (result !== null && this.chance(plan.receiptMissRate)) {
        this.counts.receiptMisses++;
        return { outcome: 'receipt miss', result: null };
      }
      return null;
    }
    const params = call.params ?? [];
    const repeatable =
      call.method === 'eth_blockNumber' ||
      (call.method === 'eth_getTransactionCount' && params[1] !== 'pending') ||
      (call.method === 'eth_getBlockByNumber' && params[0] === 'latest');
    if (!repeatable) return null;
    const key = `${call.method}:${JSON.stringify(params)}`;
    const now = Date.now();
    const seen = this.history.get(key) ?? [];
    seen.push({ at: now, result });
    const behind = plan.staleMs ?? 3000;
    // Keep what a stale answer may still need: the newest answer older than `behind`, and those after it.
    while (seen.length > 1 && seen[1].at <= now - behind) seen.shift();
    this.history.set(key, seen);
    if (seen[0].at > now - behind || !this.chance(plan.staleRate)) return null;
    this.counts.staleAnswers++;
    return { outcome: 'stale', result: seen[0].result };
  }

  private async forward(text: string): Promise<{ status: number; body: string }> {
    const r = await fetch(this.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    return { status: r.status, body: await r.text() };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
