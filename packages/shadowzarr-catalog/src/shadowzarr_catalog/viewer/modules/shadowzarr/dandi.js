/**
 * DANDI asset download URLs (`https://api.dandiarchive.org/api/assets/<id>/download/`) redirect
 * to the file in the archive's bucket. The redirect is resolved once and reused for ten minutes,
 * so a chunk costs one request instead of two.
 */
import { SourceUnavailableError } from "./errors.js";
const DANDI_HOSTS = new Set([
    "api.dandiarchive.org",
    "api.sandbox.dandiarchive.org",
    "api-staging.dandiarchive.org",
]);
const DOWNLOAD_PATH = /^\/api\/(?:dandisets\/[^/]+\/versions\/[^/]+\/)?assets\/[^/]+\/download\/?$/;
export const DANDI_CACHE_MS = 10 * 60 * 1000;
export function isDandiDownloadUrl(url) {
    let parsed;
    try {
        parsed = new URL(url);
    }
    catch {
        return false;
    }
    return ((parsed.protocol === "https:" || parsed.protocol === "http:") &&
        DANDI_HOSTS.has(parsed.host) &&
        DOWNLOAD_PATH.test(parsed.pathname));
}
/**
 * Where `url` redirects to. Node reads the Location header of a manual redirect. A browser
 * hides it (the response is "opaqueredirect"), so there the redirect is followed with a
 * one-byte range request and `response.url` is read.
 */
export async function followRedirectOnce(url, fetchFn) {
    let response;
    try {
        response = await fetchFn(new Request(url, { redirect: "manual", cache: "no-store" }));
    }
    catch (cause) {
        throw new SourceUnavailableError(`cannot resolve ${url}: ${String(cause)}`, url, undefined, {
            cause,
        });
    }
    await response.body?.cancel();
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location !== null) {
        return new URL(location, url).href;
    }
    if (response.type === "opaqueredirect" || response.status === 0) {
        const followed = await fetchFn(new Request(url, { headers: { Range: "bytes=0-0" }, cache: "no-store" }));
        await followed.body?.cancel();
        if (!followed.ok) {
            throw new SourceUnavailableError(`${url} answered ${followed.status} after its redirect`, url, followed.status);
        }
        return followed.url || url;
    }
    if (response.ok)
        return url;
    throw new SourceUnavailableError(`${url} answered ${response.status}`, url, response.status);
}
/** The default resolver: DANDI download URLs through a 10-minute cache, others unchanged. */
export function createDandiResolver(fetchFn, cacheMs = DANDI_CACHE_MS, now = Date.now) {
    const cache = new Map();
    return (url) => {
        if (!isDandiDownloadUrl(url))
            return Promise.resolve(url);
        const hit = cache.get(url);
        if (hit !== undefined && hit.expires > now())
            return hit.target;
        const target = followRedirectOnce(url, fetchFn);
        cache.set(url, { expires: now() + cacheMs, target });
        target.catch(() => {
            if (cache.get(url)?.target === target)
                cache.delete(url);
        });
        return target;
    };
}
