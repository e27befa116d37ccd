// The V8 heap of one thread of the process (the API's main thread, the creates' thread, the workers'
// thread): each thread has a heap of its own, which process-wide figures (resident memory) cannot tell
// apart. The threads report theirs every couple of seconds to the main thread, for /metrics.

export interface ThreadMemory {
  thread: 'api' | 'creates' | 'workers';
  /** Bytes of live objects (and garbage not collected yet). */
  heapUsed: number;
  /** Bytes V8 has reserved for this thread's heap. */
  heapTotal: number;
  /** Bytes outside the heap held by its objects (buffers, native memory V8 is told of). */
  external: number;
}

/** How often the threads report their heap to the main thread. */
export const MEMORY_REPORT_MS = 2000;

/** This thread's heap right now. */
export function threadMemory(thread: ThreadMemory['thread']): ThreadMemory {
  const m = process.memoryUsage();
  return { thread, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external };
}
