/** A concurrency limit for the store's own fetches (zarrita and undici impose none). */
export class Limiter {
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.limit) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#active++;
    }
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next !== undefined) next();
      else this.#active--;
    }
  }
}
