/**
 * The metadata zarrita is shown.
 *
 * - Non-finite tokens and large fill values are rewritten so that `JSON.parse` reads them
 *   (json.ts).
 * - An array whose chunks end with HDF5's Fletcher-32 checksum is shown without that codec: the
 *   store verifies and removes the checksum itself (naming the chunk and its file when it does
 *   not match), so reading such arrays does not depend on a codec registered with the very copy
 *   of zarrita the application uses. With an installed folder (`npm install file:…`) or
 *   `npm link` there are two copies, and a registration in one is invisible to the other.
 * - A struct array, which zarrita 0.7.5 cannot open, is shown as uint8 with the bytes of one
 *   element as a last axis (struct.ts), and so is a `raw_bytes` array of records that
 *   `_STRUCTURED_DTYPE` describes. A `variable_length_bytes` array is shown as `string` with the
 *   codec `shadowzarr.vlen-bytes` (sequences.ts). Any other data type that is not a name (zarrita 0.7.5
 *   knows names only, and fails on others with an untyped `TypeError`) is refused with a
 *   `ReferenceFormatError` naming the array, as is a struct whose field sizes are unknown.
 */
import { arrayInfoFromMetadata, endsWithFletcher32 } from "./array-metadata.js";
import { ReferenceFormatError } from "./errors.js";
import { normalizeMetadataText, parseJson } from "./json.js";
import { VLEN_BYTES_CODEC } from "./sequences.js";
import { STRUCTURED_DTYPE, structAsBytes } from "./struct.js";
/** The data type of arrays of variable-length bytes (sequences of numbers, `_VLEN_DTYPE`). */
const VLEN_BYTES = "variable_length_bytes";
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
function forZarrita(node, options) {
    if (!isObject(node))
        return node;
    let out = node;
    if (node.node_type === "array") {
        if (endsWithFletcher32(node.codecs)) {
            out = { ...out, codecs: node.codecs.slice(0, -1) };
        }
        if (node.data_type === VLEN_BYTES) {
            const codecs = (Array.isArray(out.codecs) ? out.codecs : []).map((codec) => isObject(codec) && codec.name === "vlen-bytes" ? { name: VLEN_BYTES_CODEC } : codec);
            out = { ...out, data_type: "string", fill_value: "", codecs };
        }
        if (options.structAsBytes && isObject(node.data_type)) {
            const struct = arrayInfoFromMetadata("", out).struct;
            if (struct !== undefined)
                out = structAsBytes(out, struct.layout, struct.fillByte ?? 0);
        }
    }
    const consolidated = node.consolidated_metadata;
    if (isObject(consolidated) && isObject(consolidated.metadata)) {
        const metadata = Object.fromEntries(Object.entries(consolidated.metadata).map(([path, child]) => [
            path,
            forZarrita(child, options),
        ]));
        out = { ...out, consolidated_metadata: { ...consolidated, metadata } };
    }
    return out;
}
/**
 * The text of a zarr.json (or .zattrs, .zarray) as the store hands it to zarrita; `key` names
 * it in errors.
 */
export function metadataForZarrita(text, options, key = "zarr.json") {
    const normal = normalizeMetadataText(text);
    const rewrite = normal.includes("numcodecs.fletcher32") ||
        normal.includes(`"${VLEN_BYTES}"`) ||
        (options.structAsBytes && (normal.includes('"struct"') || normal.includes(STRUCTURED_DTYPE)));
    const out = rewrite ? JSON.stringify(forZarrita(parseJson(normal), options)) : normal;
    if (options.structAsBytes && normal.includes('"data_type"') && /"data_type"\s*:\s*\{/.test(out)) {
        const node = parseJson(out);
        if (isObject(node) && node.node_type === "array" && isObject(node.data_type)) {
            const name = JSON.stringify(node.data_type).slice(0, 200);
            throw new ReferenceFormatError(`${key}: the array's data type ${name} cannot be read: zarrita 0.7.5 opens data types ` +
                "given by name only, and the store shows only struct arrays of known field sizes " +
                "(numbers, fixed_length_utf32, null_terminated_bytes, raw_bytes, structs) as bytes");
        }
    }
    return out;
}
