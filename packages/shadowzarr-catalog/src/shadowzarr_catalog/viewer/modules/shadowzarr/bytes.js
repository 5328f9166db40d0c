/** Byte helpers that work the same in browsers and in Node (no `Buffer`). */
import { ReferenceFormatError } from "./errors.js";
const encoder = new TextEncoder();
const decoder = new TextDecoder();
export function utf8Encode(text) {
    return encoder.encode(text);
}
export function utf8Decode(bytes) {
    return decoder.decode(bytes);
}
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/**
 * Strict base64 (RFC 4648, standard alphabet, padded, no whitespace), the rule of the format for
 * "base64:" values; anything else is a ReferenceFormatError, as in the Python reader.
 */
export function base64Decode(text) {
    if (!BASE64.test(text)) {
        throw new ReferenceFormatError(`${JSON.stringify(text.slice(0, 40))} is not base64`);
    }
    const binary = atob(text);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++)
        out[i] = binary.charCodeAt(i);
    return out;
}
/** Join byte arrays into one fresh buffer (byteOffset 0). */
export function concatBytes(parts) {
    let total = 0;
    for (const p of parts)
        total += p.length;
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
        out.set(p, at);
        at += p.length;
    }
    return out;
}
