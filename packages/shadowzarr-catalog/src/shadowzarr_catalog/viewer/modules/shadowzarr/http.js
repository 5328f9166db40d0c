import { RangeResponseError, SourceChangedError, SourceUnavailableError } from "./errors.js";
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;
const UNSATISFIED_RANGE = /^bytes \*\/(\d+)$/;
function strongEtag(etag) {
    return etag.startsWith("W/") ? etag.slice(2) : etag;
}
/**
 * What a failed fetch may mean in a browser: a page or worker reading from another origin sees a
 * CORS refusal as a plain network error. Elsewhere (Node, same origin) there is no CORS to blame.
 */
function corsHint(request) {
    const origin = globalThis.location?.origin;
    const inBrowser = typeof globalThis.navigator?.userAgent ===
        "string" &&
        !/Node\.js|Deno|Bun/.test(globalThis.navigator.userAgent);
    if (!inBrowser || origin === undefined || origin === "null")
        return "";
    let target;
    try {
        target = new URL(request.url).origin;
    }
    catch {
        return "";
    }
    if (target === origin)
        return "";
    const headers = request.headers.has("if-match") ? "Range and If-Match" : "Range";
    return (` ${target} is another origin than this page (${origin}): a server without CORS headers ` +
        `(Access-Control-Allow-Origin, and Access-Control-Allow-Headers listing ${headers}) fails ` +
        "this way" +
        (request.headers.has("if-match")
            ? "; ifMatch: false (which still compares ETags) or validateSources: false sends no If-Match."
            : "."));
}
export class HttpReader {
    options;
    constructor(options) {
        this.options = options;
    }
    #headers(logicalUrl, range) {
        const headers = new Headers();
        if (range !== undefined)
            headers.set("Range", range);
        const etag = this.options.validateSources && this.options.ifMatch !== false
            ? this.options.sourceInfo(logicalUrl)?.etag
            : undefined;
        if (etag)
            headers.set("If-Match", etag);
        return headers;
    }
    async #send(request, logicalUrl) {
        let response;
        try {
            response = await this.options.fetch(request);
        }
        catch (cause) {
            if (cause?.name === "AbortError")
                throw cause;
            if (request.signal?.aborted)
                throw request.signal.reason;
            throw new SourceUnavailableError(`fetching ${request.url} failed (${String(cause)}).${corsHint(request)}`, logicalUrl, undefined, { cause });
        }
        if (response.status === 412) {
            await response.body?.cancel();
            throw new SourceChangedError(`${logicalUrl} changed since the references were written (412 on If-Match)`, logicalUrl);
        }
        return response;
    }
    #checkSource(logicalUrl, response, total) {
        if (!this.options.validateSources)
            return;
        const info = this.options.sourceInfo(logicalUrl);
        if (info === undefined)
            return;
        if (info.size !== undefined && total !== undefined && info.size !== total) {
            throw new SourceChangedError(`${logicalUrl} has ${total} bytes, the references recorded ${info.size}`, logicalUrl);
        }
        const etag = response.headers.get("etag");
        if (info.etag && etag !== null && strongEtag(etag) !== strongEtag(info.etag)) {
            throw new SourceChangedError(`${logicalUrl} has ETag ${etag}, the references recorded ${info.etag}`, logicalUrl);
        }
    }
    #unavailable(logicalUrl, response) {
        return new SourceUnavailableError(`${response.url || logicalUrl} answered ${response.status} ${response.statusText}`.trim(), logicalUrl, response.status);
    }
    /**
     * Bytes [start, end) of the file at `physicalUrl` (the resolved form of `logicalUrl`, whose
     * recorded size and ETag apply). A range past the end of the file comes back clipped.
     */
    async readRange(logicalUrl, physicalUrl, start, end, signal) {
        const request = new Request(physicalUrl, {
            headers: this.#headers(logicalUrl, `bytes=${start}-${end - 1}`),
            cache: "no-store",
            signal,
        });
        const response = await this.#send(request, logicalUrl);
        if (response.status === 416) {
            await response.body?.cancel();
            const m = UNSATISFIED_RANGE.exec(response.headers.get("content-range") ?? "");
            const total = m === null ? this.options.sourceInfo(logicalUrl)?.size : Number(m[1]);
            if (total !== undefined && start >= total) {
                this.#checkSource(logicalUrl, response, total);
                return { bytes: new Uint8Array(0), total };
            }
            throw new RangeResponseError(`${physicalUrl} refused range ${start}-${end - 1}`, logicalUrl);
        }
        if (response.status === 200) {
            await response.body?.cancel();
            throw new RangeResponseError(`${physicalUrl} answered 200 to a range request (it ignores Range); refusing the body`, logicalUrl);
        }
        if (response.status !== 206) {
            await response.body?.cancel();
            throw this.#unavailable(logicalUrl, response);
        }
        const header = response.headers.get("content-range");
        let total;
        let expected;
        if (header !== null) {
            const m = CONTENT_RANGE.exec(header.trim());
            if (m === null) {
                await response.body?.cancel();
                throw new RangeResponseError(`${physicalUrl}: unreadable Content-Range ${header}`, logicalUrl);
            }
            const [a, b] = [Number(m[1]), Number(m[2])];
            total = m[3] === "*" ? undefined : Number(m[3]);
            const clippedEnd = total !== undefined && end > total ? total : end;
            if (a !== start || b !== clippedEnd - 1) {
                await response.body?.cancel();
                throw new RangeResponseError(`${physicalUrl}: asked for bytes ${start}-${end - 1}, got Content-Range ${header}`, logicalUrl);
            }
            expected = b - a + 1;
        }
        this.#checkSource(logicalUrl, response, total);
        const bytes = new Uint8Array(await response.arrayBuffer());
        if (expected === undefined) {
            // Content-Range not exposed (CORS): check the length against what is known.
            const size = this.options.sourceInfo(logicalUrl)?.size;
            expected = size !== undefined ? Math.min(end, size) - start : undefined;
            if (bytes.length > end - start)
                expected = end - start;
        }
        if (expected !== undefined && bytes.length !== expected) {
            throw new RangeResponseError(`${physicalUrl}: bytes ${start}-${end - 1} came back with ${bytes.length} bytes, ` +
                `expected ${expected}`, logicalUrl);
        }
        return { bytes, total };
    }
    /** The last `length` bytes of a file. */
    async readSuffix(logicalUrl, physicalUrl, length, signal) {
        const request = new Request(physicalUrl, {
            headers: this.#headers(logicalUrl, `bytes=-${length}`),
            cache: "no-store",
            signal,
        });
        const response = await this.#send(request, logicalUrl);
        if (response.status === 200) {
            await response.body?.cancel();
            throw new RangeResponseError(`${physicalUrl} answered 200 to a suffix request`, logicalUrl);
        }
        if (response.status !== 206) {
            await response.body?.cancel();
            throw this.#unavailable(logicalUrl, response);
        }
        const m = CONTENT_RANGE.exec(response.headers.get("content-range")?.trim() ?? "");
        const total = m === null || m[3] === "*" ? undefined : Number(m[3]);
        this.#checkSource(logicalUrl, response, total);
        const bytes = new Uint8Array(await response.arrayBuffer());
        const expected = m === null ? undefined : Number(m[2]) - Number(m[1]) + 1;
        if (bytes.length > length || (expected !== undefined && bytes.length !== expected)) {
            throw new RangeResponseError(`${physicalUrl}: suffix of ${length} bytes came back wrong`, logicalUrl);
        }
        return { bytes, total };
    }
    /** A whole file; undefined when the server says 404 and `missingOk`. */
    async readWhole(logicalUrl, physicalUrl, signal, missingOk = false) {
        const request = new Request(physicalUrl, { headers: this.#headers(logicalUrl), signal });
        const response = await this.#send(request, logicalUrl);
        if (missingOk && (response.status === 404 || response.status === 403)) {
            await response.body?.cancel();
            return undefined;
        }
        if (response.status !== 200) {
            await response.body?.cancel();
            throw this.#unavailable(logicalUrl, response);
        }
        const bytes = new Uint8Array(await response.arrayBuffer());
        this.#checkSource(logicalUrl, response, bytes.length);
        return bytes;
    }
}
