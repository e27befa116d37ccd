// The HTTP of JSON-RPC calls: node:http with kept-alive connections, in place of the global fetch that
// viem calls by default. A mint's calls carry large bodies both ways (a signed mintBatch of 400 tokens
// is 100 KB of hex, its receipt 250 KB of logs), and fetch moves each through web streams and a
// streaming text decoder: on the workers' thread, which is what a mint drain waits for, a call cost
// about twice the CPU it costs here (bench/README.md).
import http from 'node:http';
import https from 'node:https';

/** The largest answer read, as viem's own limit: a provider that sends more is failing. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/**
 * How long a kept-alive connection may sit idle before it is closed (fetch's own default): a provider's
 * load balancer that drops idle connections first would otherwise fail the next call sent on one. A
 * call under way is not cut by it: only viem's time limit ends a slow answer.
 */
const IDLE_MS = 4000;

/** What a call on a kept-alive connection the server has just closed fails with. */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);

const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_MS }),
};

/** What viem reads of an answer (utils/rpc/http.ts): status, headers and the whole text. */
export interface RpcAnswer {
  ok: boolean;
  status: number;
  statusText: string;
  headers: Headers;
  body: null;
  text(): Promise<string>;
}

interface RpcInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | null;
}

/**
 * A fetch for viem's HTTP client: the answer is read whole before it resolves (no stream for viem to
 * read again), up to MAX_ANSWER_BYTES. An abort (viem's time limit, a caller's signal) ends the call
 * with the signal's reason, an AbortError, which viem turns into its TimeoutError.
 */
export function rpcFetch(url: string | URL, init: RpcInit = {}): Promise<RpcAnswer> {
  const target = new URL(url);
  const agent = agents[target.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new Error(`not an HTTP URL: ${target.protocol}`));
  const { signal } = init;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    let request: http.ClientRequest;
    const send = (again: boolean) => {
      let answered = false;
      request = (target.protocol === 'https:' ? https : http).request(target, { method: init.method ?? 'POST', headers: init.headers, agent }, (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) return void request.destroy(new Error(`the provider's answer is over ${MAX_ANSWER_BYTES} bytes`));
          chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('end', () => {
          signal?.removeEventListener('abort', onAbort);
          const status = res.statusCode ?? 0;
          const headers = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
          const text = Buffer.concat(chunks, size).toString('utf8');
          resolve({ ok: status >= 200 && status < 300, status, statusText: res.statusMessage ?? '', headers, body: null, text: async () => text });
        });
      });
      request.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed as it was reused: the server never read the call
        // (it closed an idle connection), so it goes once more on a new one, as Node's docs advise.
        if (!again && !answered && request.reusedSocket && STALE_CONNECTION.has(err.code ?? '') && !signal?.aborted) return send(true);
        fail(err);
      });
      request.end(init.body);
    };
    function fail(err: unknown): void {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    }
    function onAbort(): void {
      request.destroy();
      fail(signal!.reason);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    send(false);
  });
}
