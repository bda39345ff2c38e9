/**
 * Time spent on the item shown: from when it is drawn to its save, leaving
 * out the time the page was hidden (another tab, a minimised window). The
 * clock is injectable for the tests.
 */
export class ItemTimer {
  private shownAt = 0;
  private hiddenSince: number | null = null;
  private hiddenTotal = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A new item is drawn (visible or not). */
  start(hidden = false): void {
    this.shownAt = this.now();
    this.hiddenTotal = 0;
    this.hiddenSince = hidden ? this.shownAt : null;
  }

  /** The page was hidden or shown again. */
  visibility(hidden: boolean): void {
    const t = this.now();
    if (hidden && this.hiddenSince === null) this.hiddenSince = t;
    else if (!hidden && this.hiddenSince !== null) {
      this.hiddenTotal += t - this.hiddenSince;
      this.hiddenSince = null;
    }
  }

  /** Seconds visible since the item was drawn (>= 0). */
  seconds(): number {
    const t = this.now();
    const hidden = this.hiddenTotal + (this.hiddenSince === null ? 0 : t - this.hiddenSince);
    return Math.max(0, (t - this.shownAt - hidden) / 1000);
  }
}
