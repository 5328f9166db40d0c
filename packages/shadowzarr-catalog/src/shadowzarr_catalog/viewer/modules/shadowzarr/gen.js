/**
 * kerchunk gen entries, compiled into a key matcher: a key is tested against the entry's key
 * pattern, the dimension values are read from it and checked against the dimensions, and only
 * then are url/offset/length evaluated. Nothing is expanded up front. The rules (what an entry
 * must hold, what a key must look like) are those of the Python reader, checked by the
 * conformance cases.
 */
import { isName } from "./arithmetic.js";
import { GenExpressionError, ReferenceFormatError } from "./errors.js";
import { compileTemplate, expandNamedTemplates } from "./template.js";
/** More dimensions than this is not a reference file anyone writes. */
export const MAX_GEN_DIMENSIONS = 32;
function dimensionInteger(name, value) {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
        throw new ReferenceFormatError(`gen dimension ${name} must hold integers of magnitude at most 2^53 - 1`);
    }
    return value;
}
function compileDimension(name, spec) {
    if (Array.isArray(spec)) {
        const values = new Set(spec.map((v) => dimensionInteger(name, v)));
        return (v) => values.has(v);
    }
    if (typeof spec === "number") {
        const stop = dimensionInteger(name, spec);
        return (v) => v >= 0 && v < stop;
    }
    if (spec === null || typeof spec !== "object") {
        throw new ReferenceFormatError(`gen dimension ${name} must be an object, list or integer`);
    }
    const raw = spec;
    if (!("stop" in raw))
        throw new ReferenceFormatError(`gen dimension ${name} has no stop`);
    const start = dimensionInteger(name, "start" in raw ? raw.start : 0);
    const stop = dimensionInteger(name, raw.stop);
    const step = dimensionInteger(name, "step" in raw ? raw.step : 1);
    if (step === 0)
        throw new ReferenceFormatError(`gen dimension ${name} has step 0`);
    return step > 0
        ? (v) => v >= start && v < stop && (v - start) % step === 0
        : (v) => v <= start && v > stop && (start - v) % -step === 0;
}
function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
function fieldTemplate(key, what, value) {
    if (typeof value === "number" && Number.isInteger(value))
        return compileTemplate(String(value));
    if (typeof value !== "string") {
        throw new ReferenceFormatError(`gen entry ${key}: ${what} must be text or an integer`);
    }
    return compileTemplate(value);
}
export class GenEntry {
    #pattern;
    #names;
    #dimensions;
    #url;
    #offset;
    #length;
    #prefix;
    constructor(entry, templates = {}) {
        if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
            throw new ReferenceFormatError("a gen entry must be an object");
        }
        for (const field of ["key", "url", "offset", "length", "dimensions"]) {
            if (!(field in entry))
                throw new ReferenceFormatError(`gen entry lacks ${field}`);
        }
        const key = entry.key;
        if (typeof key !== "string" || typeof entry.url !== "string") {
            throw new ReferenceFormatError("gen entry key and url must be strings");
        }
        const offset = fieldTemplate(key, "offset", entry.offset);
        const length = fieldTemplate(key, "length", entry.length);
        const rawDimensions = entry.dimensions;
        if (rawDimensions === null ||
            typeof rawDimensions !== "object" ||
            Array.isArray(rawDimensions)) {
            throw new ReferenceFormatError(`gen entry ${key}: dimensions must be an object`);
        }
        const names = Object.keys(rawDimensions);
        this.#dimensions = new Map(names.map((n) => [n, compileDimension(n, rawDimensions[n])]));
        if (names.length === 0)
            throw new ReferenceFormatError(`gen entry ${key} has no dimensions`);
        if (names.length > MAX_GEN_DIMENSIONS) {
            throw new ReferenceFormatError(`gen entry ${key} has too many dimensions`);
        }
        const shared = names.filter((n) => Object.prototype.hasOwnProperty.call(templates, n));
        if (shared.length > 0) {
            throw new ReferenceFormatError(`gen entry ${key}: ${shared} are templates and dimensions`);
        }
        this.#names = [];
        this.#prefix = "";
        const keyTemplate = compileTemplate(key);
        let source = "^";
        let last = 0;
        let first = true;
        for (const m of key.matchAll(/\{\{(.*?)\}\}/gs)) {
            const name = keyTemplate.placeholders[this.#names.length];
            if (!this.#dimensions.has(name) || !isName(name)) {
                throw new GenExpressionError(`gen key ${key} may use only bare dimension names in {{ }}, got ${JSON.stringify(name)}`);
            }
            const at = m.index ?? 0;
            if (first)
                this.#prefix = key.slice(0, at);
            first = false;
            source += escapeRegExp(key.slice(last, at)) + "(-?[0-9]+)";
            this.#names.push(name);
            last = at + m[0].length;
        }
        if (this.#names.length === 0)
            throw new GenExpressionError(`gen key ${key} uses no dimension`);
        this.#pattern = new RegExp(source + escapeRegExp(key.slice(last)) + "$");
        this.#url = compileTemplate(expandNamedTemplates(entry.url, templates, false));
        this.#offset = offset;
        this.#length = length;
        for (const [what, template] of [
            ["url", this.#url],
            ["offset", offset],
            ["length", length],
        ]) {
            const unknown = [...template.names].filter((n) => !this.#dimensions.has(n));
            if (unknown.length > 0) {
                throw new GenExpressionError(`gen entry ${key}: its ${what} uses ${unknown.sort()}, which are not dimensions`);
            }
        }
    }
    /** The reference for `key` if this entry generates it, else undefined. */
    resolve(key) {
        if (!key.startsWith(this.#prefix))
            return undefined;
        const m = this.#pattern.exec(key);
        if (m === null)
            return undefined;
        const env = {};
        for (let i = 0; i < this.#names.length; i++) {
            const name = this.#names[i];
            const text = m[i + 1];
            if (text.length > 17)
                return undefined; // beyond 2^53 - 1, so in no dimension
            const value = Number(text);
            // kerchunk renders plain integers: "05" or "-0" are other keys.
            if (String(value) !== text)
                return undefined;
            if (env[name] !== undefined && env[name] !== value)
                return undefined;
            if (!this.#dimensions.get(name)(value))
                return undefined;
            env[name] = value;
        }
        const offset = this.#offset.integer(env, "offset");
        const size = this.#length.integer(env, "length");
        if (offset + size > Number.MAX_SAFE_INTEGER) {
            throw new GenExpressionError(`gen entry key ${key}: offset + length beyond 2^53 - 1`);
        }
        return { url: this.#url.render(env), offset, size };
    }
}
