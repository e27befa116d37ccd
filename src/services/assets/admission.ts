// Back-pressure for creates (POST /asset, POST /asset/batch). An accepted create is cheap to keep once
// written (a row and a job in the database), but until it is answered its request, its parsed body and
// its place in the creates' thread's queue are held in memory; and the process as a whole (three V8
// heaps, SQLite's or pg's buffers) grows while a burst is written and minted. Rather than grow without
// limit when creates come faster than they are written or minted, a create is refused with a 503
// `overloaded` and Retry-After, having written nothing, while either:
//   - the bodies of the creates accepted and not answered yet hold more than CREATES_QUEUE_MB (a size,
//     not a count: one batch of 100 weighs as much as 100 single creates), or
//   - the process's resident memory is over MEMORY_LIMIT_MB (sampled twice a second off the request
//     path: reading it costs a system call).
// Reads, and every other write, are never refused here: they neither queue nor hold a burst's memory.
import type { Ctx } from '../context.js';
import { ApiError } from '../../util/errors.js';

/** How long a refused client is told to wait: a full queue drains within a second or so; memory takes longer to come down. */
export const RETRY_AFTER_S = { queue: 1, memory: 5 } as const;
/** A create whose size its request does not say (chunked): counted as this many bytes. */
const UNSIZED_BYTES = 1024;
const MEMORY_SAMPLE_MS = 500;

export interface AdmissionLimits {
  /** Bytes of create bodies held at once (0: no bound). */
  queueBytes: number;
  /** Resident memory of the process over which creates are refused (0: no bound). */
  memoryBytes: number;
}

export type Refusal = { reason: keyof typeof RETRY_AFTER_S; retryAfterS: number };

export class CreatesAdmission {
  /** Creates accepted and not answered yet, and the bytes of their bodies. */
  private held = { creates: 0, bytes: 0 };
  /** Refusals so far, by reason (for /metrics). */
  readonly refused = { queue: 0, memory: 0 };
  private rss: number;
  private sampler: NodeJS.Timeout | null = null;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly residentBytes: () => number = () => process.memoryUsage.rss(),
  ) {
    this.rss = limits.memoryBytes > 0 ? residentBytes() : 0;
    if (limits.memoryBytes > 0) {
      this.sampler = setInterval(() => this.sample(), MEMORY_SAMPLE_MS);
      this.sampler.unref();
    }
  }

  /** Refuses (null) or holds `bytes` until `release(bytes)`. */
  admit(bytes: number): Refusal | null {
    const { queueBytes, memoryBytes } = this.limits;
    if (memoryBytes > 0 && this.rss > memoryBytes) return this.refuse('memory');
    // The first create always goes in, however large: a body the HTTP limit let through must be answerable.
    if (queueBytes > 0 && this.held.creates > 0 && this.held.bytes + bytes > queueBytes) return this.refuse('queue');
    this.held.creates++;
    this.held.bytes += bytes;
    return null;
  }

  release(bytes: number): void {
    this.held.creates--;
    this.held.bytes -= bytes;
  }

  /** Reads the resident memory again (every MEMORY_SAMPLE_MS; now, for a test). */
  sample(): void {
    this.rss = this.residentBytes();
  }

  /** What is held right now and the last resident memory sampled (for /metrics). */
  snapshot(): { creates: number; bytes: number; rssBytes: number } {
    return { ...this.held, rssBytes: this.rss };
  }

  stop(): void {
    if (this.sampler) clearInterval(this.sampler);
  }

  private refuse(reason: Refusal['reason']): Refusal {
    this.refused[reason]++;
    return { reason, retryAfterS: RETRY_AFTER_S[reason] };
  }
}

const admissions = new WeakMap<Ctx, CreatesAdmission>();

/** The admission of the creates of `ctx`'s process (one per context: the API's). */
export function admissionOf(ctx: Ctx): CreatesAdmission {
  let a = admissions.get(ctx);
  if (!a) {
    const mb = 1024 * 1024;
    a = new CreatesAdmission({ queueBytes: ctx.config.createsQueueMb * mb, memoryBytes: ctx.config.memoryLimitMb * mb });
    admissions.set(ctx, a);
  }
  return a;
}

/**
 * Runs `create` if the creates held and the memory allow, holding the request's size until it is
 * answered; otherwise throws the 503 `overloaded` after `retryAfter(seconds)` has set the header.
 */
export async function admitted<T>(ctx: Ctx, contentLength: string | undefined, retryAfter: (s: number) => void, create: () => Promise<T>): Promise<T> {
  const bytes = contentLength ? Number(contentLength) || UNSIZED_BYTES : UNSIZED_BYTES;
  const admission = admissionOf(ctx);
  const refusal = admission.admit(bytes);
  if (refusal) {
    retryAfter(refusal.retryAfterS);
    throw ApiError.of(
      'overloaded',
      refusal.reason === 'memory'
        ? 'The service is short of memory (MEMORY_LIMIT_MB) while it writes and mints what it has: nothing was written; retry after retry-after seconds.'
        : 'The service holds as many creates as it takes at once (CREATES_QUEUE_MB): nothing was written; retry after retry-after seconds.',
    );
  }
  try {
    return await create();
  } finally {
    admission.release(bytes);
  }
}
