/**
 * A concurrency limit for the store's own fetches (zarrita and undici impose none).
 *
 * In Node, a slot is handed on one `setImmediate` after a fetch finished: undici returns the
 * socket to its pool only after the response body has been delivered, so a request started at
 * once finds every socket busy and opens another (measured: 32 sockets for 16 in flight; 16
 * with the hand-over). Browsers have no `setImmediate` and cap connections per host themselves.
 */
const afterIo = typeof globalThis.setImmediate === "function"
    ? () => new Promise((resolve) => setImmediate(resolve))
    : undefined;
export class Limiter {
    limit;
    #active = 0;
    #waiting = [];
    constructor(limit) {
        this.limit = limit;
    }
    async run(task) {
        if (this.#active >= this.limit) {
            await new Promise((resolve) => this.#waiting.push(resolve));
        }
        else {
            this.#active++;
        }
        try {
            return await task();
        }
        finally {
            void this.#release();
        }
    }
    async #release() {
        if (afterIo !== undefined && this.#waiting.length > 0)
            await afterIo();
        const next = this.#waiting.shift();
        if (next !== undefined)
            next();
        else
            this.#active--;
    }
}
