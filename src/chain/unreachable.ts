// Whether an error means "the chain's JSON-RPC endpoint did not answer" (down, restarting, timing
// out) rather than "the chain refused this". Work that meets the first waits and tries again without
// spending one of its attempts: an outage of any length must not fail a mint for good.
const TRANSPORT_ERRORS = new Set(['HttpRequestError', 'TimeoutError', 'WebSocketRequestError', 'SocketClosedError']);

export function isChainUnreachable(err: unknown): boolean {
  for (let e = err as { name?: string; cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth++) {
    if (e.name && TRANSPORT_ERRORS.has(e.name)) return true;
  }
  return false;
}
