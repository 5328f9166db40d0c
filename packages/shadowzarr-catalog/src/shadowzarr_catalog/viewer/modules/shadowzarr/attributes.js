/**
 * The Non-Finite Attributes and Bytes Attributes Zarr conventions: NaN/±Infinity stored as the
 * strings "NaN"/"Infinity"/"-Infinity", bytes as "base64:…", and a real string of either form
 * (or one starting with `_str_`) escaped with the prefix `_str_`. A node registers the
 * conventions it uses in its `zarr_conventions` attribute (an object with the convention's
 * uuid); only registered ones are decoded. The rules are Python's `decode_attributes`, checked
 * by the conformance cases of `shadowzarr_spec/conformance/attributes.json`.
 */
import { base64Decode } from "./bytes.js";
export const NON_FINITE_CONVENTION = {
    uuid: "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11",
    name: "non-finite-attributes",
};
export const BYTES_CONVENTION = {
    uuid: "9d2c6a57-0b8e-5f3c-a1e4-3e7b5c2d9f40",
    name: "bytes-attributes",
};
export const CONVENTIONS_KEY = "zarr_conventions";
export const STR_PREFIX = "_str_";
const BASE64_PREFIX = "base64:";
export const NON_FINITE_WORDS = {
    NaN: Number.NaN,
    Infinity: Number.POSITIVE_INFINITY,
    "-Infinity": Number.NEGATIVE_INFINITY,
};
function isConvention(entry, convention) {
    return (entry !== null &&
        typeof entry === "object" &&
        entry.uuid === convention.uuid);
}
/** Whether a `zarr_conventions` value registers `convention` (an entry with its uuid). */
export function registers(conventions, convention) {
    return Array.isArray(conventions) && conventions.some((e) => isConvention(e, convention));
}
/**
 * Decode the attributes of a group or array (`array.attrs`) following the conventions its
 * `zarr_conventions` attribute registers: numbers for the non-finite strings, `Uint8Array` for
 * "base64:…" strings, `_str_` stripped exactly once. The decoded conventions leave
 * `zarr_conventions` (which is dropped when nothing else remains); other attributes are
 * returned unchanged. A "base64:" value that is not base64 is a ReferenceFormatError.
 */
export function decodeAttributes(attributes) {
    const conventions = attributes[CONVENTIONS_KEY];
    const nonFinite = registers(conventions, NON_FINITE_CONVENTION);
    const bytes = registers(conventions, BYTES_CONVENTION);
    if (!nonFinite && !bytes)
        return { ...attributes };
    const decodeValue = (value) => {
        if (typeof value === "string") {
            if (value.startsWith(STR_PREFIX))
                return value.slice(STR_PREFIX.length);
            if (nonFinite && Object.prototype.hasOwnProperty.call(NON_FINITE_WORDS, value)) {
                return NON_FINITE_WORDS[value];
            }
            if (bytes && value.startsWith(BASE64_PREFIX)) {
                return base64Decode(value.slice(BASE64_PREFIX.length));
            }
            return value;
        }
        if (Array.isArray(value))
            return value.map(decodeValue);
        if (value !== null && typeof value === "object") {
            const out = {};
            for (const [k, v] of Object.entries(value))
                out[k] = decodeValue(v);
            return out;
        }
        return value;
    };
    const out = {};
    for (const [key, value] of Object.entries(attributes)) {
        if (key !== CONVENTIONS_KEY)
            out[key] = decodeValue(value);
    }
    const remaining = conventions.filter((e) => !isConvention(e, NON_FINITE_CONVENTION) && !isConvention(e, BYTES_CONVENTION));
    if (remaining.length > 0)
        out[CONVENTIONS_KEY] = remaining;
    return out;
}
