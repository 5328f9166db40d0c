import { Limiter } from "./limiter.js";
import { planMerges } from "./merge.js";
export class RangeBatcher {
    http;
    resolveUrl;
    options;
    #queue = [];
    #scheduled = false;
    limiter;
    stats = { requests: 0, reads: 0 };
    constructor(http, resolveUrl, options) {
        this.http = http;
        this.resolveUrl = resolveUrl;
        this.options = options;
        this.limiter = new Limiter(options.concurrency);
    }
    /** Bytes [start, end) of the file at (logical) `url`, batched with the reads around it. */
    read(url, start, end, signal) {
        this.stats.reads++;
        if (signal?.aborted)
            return Promise.reject(signal.reason);
        return new Promise((resolve, reject) => {
            const pending = { url, start, end, signal, resolve, reject, settled: false };
            this.#queue.push(pending);
            if (!this.#scheduled) {
                this.#scheduled = true;
                if (this.options.batchWindow === "macrotask")
                    setTimeout(() => this.#flush(), 0);
                else
                    queueMicrotask(() => this.#flush());
            }
        });
    }
    #flush() {
        this.#scheduled = false;
        const batch = this.#queue.splice(0);
        const logicalUrls = [...new Set(batch.map((p) => p.url))];
        // Resolve every URL of the batch first, so reads that resolve to one file (a DANDI asset
        // and its bucket URL, say) are grouped and merged together.
        void Promise.allSettled(logicalUrls.map((url) => this.resolveUrl(url))).then((outcomes) => {
            const physicalOf = new Map();
            const byPhysical = new Map();
            outcomes.forEach((outcome, i) => {
                const url = logicalUrls[i];
                if (outcome.status === "fulfilled")
                    physicalOf.set(url, outcome.value);
                else
                    batch.filter((p) => p.url === url).forEach((p) => settle(p, outcome.reason));
            });
            for (const p of batch) {
                const physical = physicalOf.get(p.url);
                if (physical === undefined)
                    continue;
                const list = byPhysical.get(physical);
                if (list === undefined)
                    byPhysical.set(physical, [p]);
                else
                    list.push(p);
            }
            // The recorded size and ETag of the first logical URL apply: all name the same file.
            for (const [physical, members] of byPhysical) {
                this.#fetchGroup(members[0].url, physical, members);
            }
        });
    }
    #fetchGroup(url, physical, all) {
        const members = all.filter((m) => {
            if (m.signal?.aborted)
                settle(m, m.signal.reason);
            return !m.settled;
        });
        const groups = planMerges(members, this.options.mergeGap, this.options.maxMergeSize);
        for (const group of groups) {
            const controller = new AbortController();
            let live = group.members.length;
            for (const m of group.members) {
                const signal = m.signal;
                if (signal === undefined)
                    continue;
                const onAbort = () => {
                    settle(m, signal.reason);
                    if (--live === 0)
                        controller.abort(signal.reason);
                };
                signal.addEventListener("abort", onAbort, { once: true });
                m.cleanup = () => signal.removeEventListener("abort", onAbort);
            }
            this.limiter
                .run(() => {
                if (controller.signal.aborted)
                    throw controller.signal.reason;
                this.stats.requests++;
                return this.http.readRange(url, physical, group.start, group.end, controller.signal);
            })
                .then(({ bytes, total }) => {
                for (const m of group.members) {
                    const from = m.start - group.start;
                    const to = Math.min(m.end - group.start, bytes.length);
                    const own = group.members.length === 1 && from === 0 && to === bytes.length
                        ? bytes
                        : bytes.slice(from, Math.max(from, to));
                    settle(m, undefined, { bytes: own, total });
                }
            }, (error) => group.members.forEach((m) => settle(m, error)));
        }
    }
}
function settle(p, error, result) {
    if (p.settled)
        return;
    p.settled = true;
    p.cleanup?.();
    if (result !== undefined)
        p.resolve(result);
    else
        p.reject(error);
}
