/**
 * The budgets of the socket transport's attempts on one timer of the clock. Each attempt awaiting
 * an app's reply has a deadline; they are kept in a list ordered by deadline (budgets are alike,
 * so a new one almost always goes last), and the clock's one timer is armed for the first. An
 * attempt that ends is unlinked at once; the timer is not moved for it: when it fires, whatever
 * is due expires and the timer is armed again for the first left. At thousands of round trips a
 * second this replaces a timer made, armed and cleared per attempt with a few field writes.
 */
import type { Clock, Timer } from '../clock.js';

/** What waits for its deadline (the list's links live on it: no allocation per entry). */
export interface Due {
  deadline: number;
  prevDue: Due | undefined;
  nextDue: Due | undefined;
  /** Whether it is in a list (between `add` and its removal or expiry). */
  listed: boolean;
  /** The deadline passed (called once, after it was unlinked). */
  expire(): void;
}

export class Deadlines {
  private head: Due | undefined;
  private tail: Due | undefined;
  private timer: Timer | undefined;
  /** When the timer is armed for (Infinity: not armed). */
  private armedFor = Infinity;

  constructor(private readonly clock: Clock) {}

  /** `d` expires `ms` from now unless removed first. */
  add(d: Due, ms: number): void {
    const deadline = this.clock.now() + Math.max(0, ms);
    d.deadline = deadline;
    let before = this.tail;
    while (before && before.deadline > deadline) before = before.prevDue;
    d.prevDue = before;
    d.nextDue = before ? before.nextDue : this.head;
    if (d.nextDue) d.nextDue.prevDue = d;
    else this.tail = d;
    if (before) before.nextDue = d;
    else this.head = d;
    d.listed = true;
    if (deadline < this.armedFor) this.arm(deadline);
  }

  /** `d` no longer waits (nothing if it is not listed). */
  remove(d: Due): void {
    if (!d.listed) return;
    d.listed = false;
    if (d.prevDue) d.prevDue.nextDue = d.nextDue;
    else this.head = d.nextDue;
    if (d.nextDue) d.nextDue.prevDue = d.prevDue;
    else this.tail = d.prevDue;
    d.prevDue = d.nextDue = undefined;
  }

  private arm(at: number): void {
    this.clock.clear(this.timer);
    this.armedFor = at;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, at - this.clock.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = this.clock.now();
    for (let d = this.head; d && d.deadline <= now; d = this.head) {
      this.remove(d);
      d.expire();
    }
    // a timer of the runtime may fire a moment before the wall clock says the deadline came: armed again for it
    if (this.head && this.armedFor === Infinity) this.arm(this.head.deadline);
  }
}
