// What a start has set up, undone in reverse: each part registers how it stops as soon as it runs, so a
// start that fails half-way stops what it had started, and a stop stops parts before what they use.
import type { Logger } from 'pino';

export class Shutdown {
  private readonly steps: (() => Promise<void>)[] = [];
  private readonly stopping = new AbortController();
  /** Aborted when the stop begins: what restarts parts on its own (the embedded chain) gives up then. */
  readonly signal = this.stopping.signal;

  constructor(private readonly log: Logger) {}

  add(step: () => Promise<void>): void {
    this.steps.push(step);
  }

  /** Every step runs even when one fails: a failed step must not leave the next part running. */
  async run(): Promise<void> {
    this.stopping.abort();
    for (const step of this.steps.reverse()) await step().catch((err) => this.log.error({ err }, 'shutdown step failed'));
    this.steps.length = 0;
  }
}
