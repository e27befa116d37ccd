// A background loop that runs a pass, then sleeps until its interval ends or news wakes it. News that
// comes while a pass runs makes the next pass start at once: the pass may have read its rows before
// the news (a broadcast whose receipts are waiting now, not an interval from now).
import { sleepUnlessWoken } from '../util/time.js';

export class WakeableLoop {
  private running = false;
  private done: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private wokenDuringPass = false;

  constructor(
    private readonly o: {
      pass: () => Promise<void>;
      idleMs: number;
      /** A pass that threw: the loop goes on (an outage ends, a pass runs again). */
      onError: (err: unknown) => void;
    },
  ) {}

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.done = this.loop();
  }

  /** Wakes the loop now, or makes it run again as soon as its current pass ends. */
  poke(): void {
    if (this.wake) this.wake();
    else this.wokenDuringPass = true;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.poke();
    await this.done;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.wokenDuringPass = false;
      try {
        await this.o.pass();
      } catch (err) {
        this.o.onError(err);
      }
      if (!this.wokenDuringPass && this.running) await sleepUnlessWoken(this.o.idleMs, (w) => (this.wake = w));
    }
  }
}
