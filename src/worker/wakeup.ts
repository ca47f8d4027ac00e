/**
 * A wake-up flag with one waiter: a signal that arrives while the loop is busy is kept, so the
 * loop's next wait returns at once instead of sleeping through it.
 */
export class Wakeup {
  #pending = false;
  #resolve: ((signalled: boolean) => void) | undefined;

  signal = (): void => {
    this.#pending = true;
    this.#resolve?.(true);
  };

  /** Resolves true when signalled (or a signal was pending), false when `ms` passed first. */
  wait(ms: number): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const done = (signalled: boolean) => {
        clearTimeout(timer);
        this.#resolve = undefined;
        this.#pending = false;
        resolve(signalled);
      };
      this.#resolve = done;
    });
  }
}
