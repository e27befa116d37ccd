// Work taken in groups: what arrives while a group is under way waits, and goes as the next group. A
// lone item under no load goes after the current turn of the event loop (no wait added); under load the
// groups grow by themselves to what came meanwhile, up to `max`. The creates' writes and SQLite's
// outcome commits are written this way.

export class Groups<T> {
  private waiting: T[] = [];
  private running = false;

  /** `run`: takes one group, and resolves when the next may start. */
  constructor(
    private readonly max: number,
    private readonly run: (group: T[]) => Promise<void>,
  ) {}

  add(item: T): void {
    this.waiting.push(item);
    if (this.running) return;
    this.running = true;
    setImmediate(() => void this.drain());
  }

  /** Items a group did not take after all: first in the next group. */
  putBack(items: T[]): void {
    this.waiting.unshift(...items);
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length) await this.run(this.waiting.splice(0, this.max));
    } finally {
      this.running = false;
    }
  }
}
