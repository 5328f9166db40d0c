/**
 * JSON as Python writes it: bare `NaN`, `Infinity` and `-Infinity` tokens, and 64-bit integers
 * that `JSON.parse` would round. Both are rewritten before zarrita or `JSON.parse` sees them.
 */
import { BYTES_CONVENTION, CONVENTIONS_KEY, NON_FINITE_CONVENTION, NON_FINITE_WORDS, registers, STR_PREFIX, } from "./attributes.js";
import { ReferenceFormatError } from "./errors.js";
const QUOTE = 34; // "
const BACKSLASH = 92; // \
const MINUS = 45; // -
const N = 78; // N
const I = 73; // I
/** The bare token starting at `i` (outside strings), or undefined. */
function nonFiniteTokenAt(s, i) {
    const c = s.charCodeAt(i);
    if (c === N && s.startsWith("NaN", i))
        return "NaN";
    if (c === I && s.startsWith("Infinity", i))
        return "Infinity";
    if (c === MINUS && s.charCodeAt(i + 1) === I && s.startsWith("-Infinity", i))
        return "-Infinity";
    return undefined;
}
/**
 * Replace bare `NaN`/`Infinity`/`-Infinity` tokens outside strings by the Zarr v3 string forms
 * `"NaN"`, `"Infinity"`, `"-Infinity"`. Returns `text` itself when nothing changes.
 */
export function quoteNonFinite(text) {
    return quoteNonFiniteWith(text, "");
}
function quoteNonFiniteWith(text, prefix) {
    let out = null;
    let last = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
            if (c === BACKSLASH)
                i++;
            else if (c === QUOTE)
                inString = false;
            continue;
        }
        if (c === QUOTE) {
            inString = true;
            continue;
        }
        const token = nonFiniteTokenAt(text, i);
        if (token !== undefined) {
            (out ??= []).push(text.slice(last, i), JSON.stringify(prefix + token));
            i += token.length - 1;
            last = i + 1;
        }
    }
    return out === null ? text : out.join("") + text.slice(last);
}
const LARGE_FILL = /("fill_value"\s*:\s*)(-?\d{16,})(?=\s*[,}\]])/g;
/**
 * Quote integer `fill_value`s beyond 2^53 (`JSON.parse` would round 2^64-1 to 2^64, which
 * zarrita wraps to 0n); zarrita turns the string into the exact BigInt.
 */
export function quoteLargeFillValues(text) {
    if (!text.includes("fill_value"))
        return text;
    return text.replace(LARGE_FILL, (whole, prefix, digits) => Number.isSafeInteger(Number(digits)) ? whole : `${prefix}"${digits}"`);
}
/**
 * Metadata text as zarrita can parse it: large fill values quoted, and bare non-finite tokens
 * (which the HDF5 generator writes for NWB files, so that hdmf-zarr reads them) turned into the
 * Non-Finite Attributes convention: numbers as "NaN"/"Infinity"/"-Infinity", strings that would
 * read as one escaped with `_str_`, the convention registered. `decodeAttributes` then returns
 * the numbers as numbers and a genuine string "NaN" as a string, as Python's
 * `decode_attributes` does with the bare form.
 */
export function normalizeMetadataText(text) {
    const large = quoteLargeFillValues(text);
    if (quoteNonFinite(large) === large)
        return large;
    return JSON.stringify(withoutBareNonFinite(parseJson(large)));
}
function nonFiniteWord(value) {
    return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
}
const isNonFinite = (value) => typeof value === "number" && !Number.isFinite(value);
function containsNonFinite(value) {
    if (isNonFinite(value))
        return true;
    if (Array.isArray(value))
        return value.some(containsNonFinite);
    if (value !== null && typeof value === "object")
        return Object.values(value).some(containsNonFinite);
    return false;
}
/** Every non-finite number as its word, nothing else changed (fill values, configurations). */
function quoteNumbers(value) {
    if (isNonFinite(value))
        return nonFiniteWord(value);
    if (Array.isArray(value))
        return value.map(quoteNumbers);
    if (value !== null && typeof value === "object") {
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, quoteNumbers(v)]));
    }
    return value;
}
/** A node document (zarr.json) with its attributes, and its consolidated children's, encoded. */
function withoutBareNonFinite(document) {
    if (document === null || typeof document !== "object" || Array.isArray(document)) {
        return quoteNumbers(document);
    }
    const out = {};
    for (const [key, value] of Object.entries(document)) {
        if (key === "attributes" &&
            value !== null &&
            typeof value === "object" &&
            !Array.isArray(value)) {
            out[key] = containsNonFinite(value)
                ? encodeNonFiniteAttributes(value)
                : value;
        }
        else if (key === "consolidated_metadata" && value !== null && typeof value === "object") {
            const consolidated = { ...value };
            const children = consolidated.metadata;
            if (children !== null && typeof children === "object" && !Array.isArray(children)) {
                consolidated.metadata = Object.fromEntries(Object.entries(children).map(([path, child]) => [path, withoutBareNonFinite(child)]));
            }
            out[key] = quoteNumbers(consolidated);
        }
        else {
            out[key] = quoteNumbers(value);
        }
    }
    return out;
}
/**
 * Attributes holding non-finite numbers in the Non-Finite Attributes convention. When a node
 * already registers it, its strings are already escaped; when it registers the Bytes
 * convention, strings starting with `_str_` are already escapes (decoding strips one prefix,
 * whichever convention put it there).
 */
function encodeNonFiniteAttributes(attributes) {
    const conventions = attributes[CONVENTIONS_KEY];
    if (registers(conventions, NON_FINITE_CONVENTION)) {
        return quoteNumbers(attributes);
    }
    const bytes = registers(conventions, BYTES_CONVENTION);
    const encode = (value) => {
        if (isNonFinite(value))
            return nonFiniteWord(value);
        if (typeof value === "string") {
            const escape = Object.prototype.hasOwnProperty.call(NON_FINITE_WORDS, value) ||
                (!bytes && value.startsWith(STR_PREFIX));
            return escape ? STR_PREFIX + value : value;
        }
        if (Array.isArray(value))
            return value.map(encode);
        if (value !== null && typeof value === "object") {
            return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
        }
        return value;
    };
    const out = {};
    for (const [key, value] of Object.entries(attributes)) {
        if (key !== CONVENTIONS_KEY)
            out[key] = encode(value);
    }
    out[CONVENTIONS_KEY] = [
        ...(Array.isArray(conventions) ? conventions : []),
        { ...NON_FINITE_CONVENTION },
    ];
    return out;
}
const SENTINEL = "\u0000shadowzarr-non-finite:";
/**
 * `JSON.parse` that also accepts the bare tokens `NaN`, `Infinity` and `-Infinity` (legacy
 * reference files written by Python's `json`) and reads them as numbers. Text that is not JSON
 * is a ReferenceFormatError, as in the Python reader.
 */
export function parseJson(text) {
    try {
        return JSON.parse(text);
    }
    catch (error) {
        if (!(error instanceof SyntaxError))
            throw error;
        const quoted = quoteNonFiniteWith(text, SENTINEL);
        try {
            if (quoted === text)
                throw error;
            return JSON.parse(quoted, (_key, value) => {
                if (typeof value === "string" && value.startsWith(SENTINEL)) {
                    return Number(value.slice(SENTINEL.length));
                }
                return value;
            });
        }
        catch (cause) {
            if (!(cause instanceof SyntaxError))
                throw cause;
            throw new ReferenceFormatError(`not valid JSON: ${cause.message}`, { cause });
        }
    }
}
