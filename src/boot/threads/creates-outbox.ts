// What the creates' thread sends back to the API's thread: each group's answers, made durable first.
//
// The thread flushes the WAL itself, blocking, right before it sends: its event loop has nothing else
// to do meanwhile (the next group waits for it either way), and the API's thread then answers as soon
// as the message arrives. The flush used to be the API's thread's, in the thread pool, once the
// answers had crossed: a hop to the pool and back, and a turn of the busy event loop on each side of
// it, before anyone was answered (2-3 ms of a create's wait under a burst on 2 cores, against about
// half of that for the flush here).
import type { FromCreates, WireAnswer } from './creates-thread.js';
import { toWireError } from './creates-thread.js';

export class CreatesOutbox {
  private answers: WireAnswer[] = [];
  private readonly announce = new Set<string>();
  private queued = false;

  /**
   * `flushNow`: makes every commit so far durable before it returns (the store's; nothing to do on
   * PostgreSQL, whose commits are). `send`: posts a message to the API's thread.
   */
  constructor(
    private readonly flushNow: () => void,
    private readonly send: (m: FromCreates) => void,
  ) {}

  answer(a: WireAnswer): void {
    this.answers.push(a);
    this.soon();
  }

  /** Job kinds committed creates enqueued (the API's thread wakes the workers for them). */
  announceKinds(kinds: Iterable<string>): void {
    for (const k of kinds) this.announce.add(k);
    this.soon();
  }

  /**
   * A microtask, not the next event-loop turn: the next group's writes run as microtasks too, and the
   * answers of the group before must not wait for them. A group's answers are settled together (each
   * was queued when the group committed), so they still leave in one message.
   */
  private soon(): void {
    if (this.queued) return;
    this.queued = true;
    queueMicrotask(() => this.sendNow());
  }

  /** Flushes, then sends what is waiting. Answers whose flush failed become that error: committed, maybe not on disk, so nobody may be told. */
  sendNow(): void {
    this.queued = false;
    if (!this.answers.length && !this.announce.size) return;
    let answers = this.answers;
    this.answers = [];
    const started = performance.now();
    if (answers.length) {
      try {
        this.flushNow();
      } catch (err) {
        const error = toWireError(err);
        answers = answers.map((a) => ({ id: a.id, error }));
      }
    }
    this.send({ answers, announce: [...this.announce], flushedMs: performance.now() - started });
    this.announce.clear();
  }
}
