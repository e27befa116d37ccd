// Optional publishing of production Apps' files beyond the built-in gateway: add + pin on a Kubo node
// (IPFS_API_URL, Kubo RPC) and/or pin on an IPFS Pinning Service API endpoint (PINNING_SERVICE_URL +
// PINNING_SERVICE_TOKEN). One job per (CID, target) so each retries on its own with the queue's backoff.
// The mint never waits for this: the CID is fixed by the bytes, so the token URI is final before any
// node has the file, and the built-in gateway serves it meanwhile.
//
// These endpoints are the operator's own configuration (often a node on localhost), not a user's URL,
// so they are called directly rather than through the SSRF guard.
import type { InfraCtx } from '../config/infra-context.js';
import type { DbOrTx } from '../store/db.js';
import type { Job } from '../jobs/queue.js';
import type { JobHandler } from '../jobs/worker.js';
import { PUBLISH_JOB, type JobPayloads } from '../jobs/kinds.js';
import { metadataStorage } from './store.js';
import { CHUNK_SIZE, parseCid } from './unixfs.js';

const PUBLISH_ATTEMPTS = 12; // backoff 0.5 s … 5 min: about half an hour of trying
const REQUEST_TIMEOUT_MS = 60_000;

type PublishPayload = JobPayloads[typeof PUBLISH_JOB];
type Target = PublishPayload['target'];

export interface PublishItem {
  cid: string;
  name: string;
}

/** Targets configured for this installation (pure). */
export function publishTargets(config: InfraCtx['config']): Target[] {
  const t: Target[] = [];
  if (config.ipfsApiUrl) t.push('kubo');
  if (config.pinningServiceUrl && config.pinningServiceToken) t.push('pinning');
  return t;
}

/** Queues publishing of files already in the blockstore. Returns false when nothing is configured. */
export async function enqueuePublish(ctx: InfraCtx, db: DbOrTx, items: PublishItem[]): Promise<boolean> {
  const targets = publishTargets(ctx.config);
  if (targets.length === 0 || items.length === 0) return false;
  for (const item of items) {
    for (const target of targets) {
      const payload: PublishPayload = { target, name: item.name };
      await ctx.queue.enqueue(db, { kind: PUBLISH_JOB, ref: item.cid, payload, maxAttempts: PUBLISH_ATTEMPTS });
    }
  }
  return true;
}

/** A failure that no retry can fix (e.g. the node computes a different CID): logged, not retried. */
class PermanentPublishError extends Error {}

/** The Kubo RPC add URL: every parameter that decides the CID is explicit, so node config cannot change it. */
export function kuboAddUrl(base: string): string {
  const q = new URLSearchParams({ 'cid-version': '1', 'raw-leaves': 'true', chunker: `size-${CHUNK_SIZE}`, hash: 'sha2-256', pin: 'true', quieter: 'true' });
  return `${base}/api/v0/add?${q}`;
}

/** The root CID in a Kubo `add` answer (NDJSON, one object per added entry; the root comes last). */
export function kuboAddedCid(body: string): string | null {
  const lines = body
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const o = JSON.parse(lines[i]) as { Hash?: string };
      if (o.Hash) return o.Hash;
    } catch {
      /* not JSON: keep looking */
    }
  }
  return null;
}

async function publishToKubo(ctx: InfraCtx, cidStr: string, name: string): Promise<void> {
  const cid = parseCid(cidStr);
  if (!cid) throw new PermanentPublishError(`invalid CID ${cidStr}`);
  const bytes = await metadataStorage(ctx.config).catIpfs(cid);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(kuboAddUrl(ctx.config.ipfsApiUrl!), { method: 'POST', body: form, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  if (!res.ok) throw new Error(`Kubo add answered HTTP ${res.status}: ${text.slice(0, 200)}`);
  const added = kuboAddedCid(text);
  const addedV1 = added ? parseCid(added)?.toString() : null;
  // Same bytes, same recipe: a different CID means the node is not what we think (a bug to look at).
  if (addedV1 !== cid.toString()) throw new PermanentPublishError(`Kubo computed ${added ?? 'no CID'} for the file this service addressed as ${cidStr}`);
}

async function publishToPinningService(ctx: InfraCtx, cid: string, name: string): Promise<void> {
  const res = await fetch(`${ctx.config.pinningServiceUrl}/pins`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ctx.config.pinningServiceToken}` },
    body: JSON.stringify({ cid, name }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text().catch(() => '');
  // 202 Accepted is the Pinning Service API's answer; any 2xx means the pin request is recorded.
  if (!res.ok) throw new Error(`pinning service answered HTTP ${res.status}: ${text.slice(0, 200)}`);
}

export function publishJobHandler(ctx: InfraCtx): JobHandler<typeof PUBLISH_JOB> {
  return {
    kind: PUBLISH_JOB,
    batchSize: 4,
    leaseMs: 3 * REQUEST_TIMEOUT_MS,
    pollMs: 2000,
    async handle(jobs: Job<typeof PUBLISH_JOB>[]) {
      // Each job settles on its own: one unreachable target must not fail the others' attempts.
      for (const job of jobs) {
        const p = job.payload;
        try {
          if (p.target === 'kubo') await publishToKubo(ctx, job.ref, p.name);
          else await publishToPinningService(ctx, job.ref, p.name);
          await ctx.queue.complete(ctx.db, job.id);
          ctx.log.info({ cid: job.ref, target: p.target }, 'published to IPFS');
        } catch (err) {
          const message = (err as Error).message;
          if (err instanceof PermanentPublishError) {
            ctx.log.error({ cid: job.ref, target: p.target, err: message }, 'IPFS publishing failed for good');
            await ctx.queue.complete(ctx.db, job.id);
          } else if (await ctx.queue.fail(job, message)) {
            ctx.log.error({ cid: job.ref, target: p.target, err: message, attempts: job.attempts }, 'IPFS publishing failed for good');
          } else {
            ctx.log.warn({ cid: job.ref, target: p.target, err: message }, 'IPFS publishing failed, will retry');
          }
        }
      }
    },
  };
}
