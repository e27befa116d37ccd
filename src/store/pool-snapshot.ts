// What /health and /metrics say of a process's connection pool (PostgreSQL: store/postgres/prepared.ts).
export interface PoolSnapshot {
  /** DATABASE_POOL_SIZE (a part that runs only the workers: DATABASE_WORKERS_POOL_SIZE). */
  max: number;
  open: number;
  idle: number;
  /** Queries waiting for a connection right now. */
  waiting: number;
  /** Connections handed out after a wait, and the time waited, since the start. */
  waits: number;
  wait_ms: number;
}
