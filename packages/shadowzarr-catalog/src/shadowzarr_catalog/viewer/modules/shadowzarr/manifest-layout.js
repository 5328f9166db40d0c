/**
 * The layout of a stored chunk manifest, from its own zarr.json. An index array is a plain
 * Zarr v3 array that any Zarr writer may have written, with its own chunk shape (the last axis
 * too), key encoding, byte order and compressor; the format (shadowzarr-spec README, "Other
 * rules both readers follow") allows the same as the Python reader's `ManifestLayout`: the
 * `bytes` serializer (either byte order), an optional `transpose`, at most one of blosc, zstd,
 * gzip, zlib, lz4, no sharding, and decoded index chunks of at most 64 MiB. Anything else is
 * refused here, before zarrita sees the metadata; zarrita is then handed the metadata rebuilt
 * from what was checked, nothing more.
 */
import { ReferenceFormatError } from "./errors.js";
/** Largest decoded index chunk read (4 Mi entries; shadowzarr writes 1 MiB chunks). */
export const MAX_INDEX_CHUNK_BYTES = 64 << 20;
const COMPRESSORS = {
    blosc: "blosc",
    "numcodecs.blosc": "blosc",
    zstd: "zstd",
    "numcodecs.zstd": "zstd",
    gzip: "gzip",
    "numcodecs.gzip": "gzip",
    "numcodecs.zlib": "zlib",
    "numcodecs.lz4": "numcodecs.lz4",
};
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isCount = (value) => typeof value === "number" && Number.isSafeInteger(value) && value > 0;
/**
 * The layout of the index array whose zarr.json is `document` (large integers quoted, as
 * `quoteLargeFillValues` leaves them); `grid` is the chunk grid of the array it indexes and
 * `where` names the index in errors. Throws `ReferenceFormatError`.
 */
export function manifestLayoutFromMetadata(document, grid, where) {
    if (!isObject(document) || document.node_type !== "array") {
        throw new ReferenceFormatError(`${where}: the index's zarr.json does not describe an array`);
    }
    if (document.zarr_format !== 3 || document.data_type !== "uint64") {
        throw new ReferenceFormatError(`${where}: an index array must be a Zarr v3 uint64 array`);
    }
    const shape = [...grid, 2];
    const given = document.shape;
    if (!Array.isArray(given) ||
        given.length !== shape.length ||
        given.some((n, i) => n !== shape[i])) {
        throw new ReferenceFormatError(`${where}: the index array has shape ${JSON.stringify(given)}; the data array's chunk ` +
            `grid needs ${JSON.stringify(shape)}`);
    }
    const chunkShape = regularChunkShape(document.chunk_grid, shape.length, where);
    const entries = chunkShape.reduce((a, b) => a * b, 1);
    if (entries * 8 > MAX_INDEX_CHUNK_BYTES) {
        throw new ReferenceFormatError(`${where}: index chunks of ${JSON.stringify(chunkShape)} hold more than the ` +
            `${MAX_INDEX_CHUNK_BYTES} bytes an index chunk may hold`);
    }
    const keyEncoding = checkedKeyEncoding(document.chunk_key_encoding, where);
    const codecs = checkedCodecs(document.codecs, shape.length, where);
    const transformers = document.storage_transformers;
    if (transformers !== undefined && !(Array.isArray(transformers) && transformers.length === 0)) {
        throw new ReferenceFormatError(`${where}: an index array with storage transformers`);
    }
    checkFill(document.fill_value, where);
    return {
        chunkShape,
        metadata: {
            zarr_format: 3,
            node_type: "array",
            shape,
            data_type: "uint64",
            chunk_grid: { name: "regular", configuration: { chunk_shape: chunkShape } },
            chunk_key_encoding: keyEncoding,
            fill_value: "18446744073709551615", // never used: every index chunk must exist
            codecs,
            attributes: {},
        },
    };
}
function regularChunkShape(grid, ndim, where) {
    if (!isObject(grid) || grid.name !== "regular" || !isObject(grid.configuration)) {
        throw new ReferenceFormatError(`${where}: an index array needs a regular chunk grid`);
    }
    const shape = grid.configuration.chunk_shape;
    if (!Array.isArray(shape) || shape.length !== ndim || !shape.every(isCount)) {
        throw new ReferenceFormatError(`${where}: invalid index chunk shape ${JSON.stringify(shape)?.slice(0, 80)}`);
    }
    return shape;
}
function checkedKeyEncoding(encoding, where) {
    if (encoding === undefined)
        return { name: "default", configuration: { separator: "/" } };
    if (!isObject(encoding) || (encoding.name !== "default" && encoding.name !== "v2")) {
        throw new ReferenceFormatError(`${where}: index chunk key encoding ${JSON.stringify(encoding)?.slice(0, 80)}`);
    }
    const name = encoding.name;
    const configuration = encoding.configuration ?? {};
    const separator = isObject(configuration)
        ? (configuration.separator ?? (name === "default" ? "/" : "."))
        : undefined;
    if (separator !== "/" && separator !== ".") {
        throw new ReferenceFormatError(`${where}: index chunk key separator ${JSON.stringify(separator)}`);
    }
    return { name, configuration: { separator } };
}
function checkedCodecs(codecs, ndim, where) {
    if (!Array.isArray(codecs) || !codecs.every(isObject)) {
        throw new ReferenceFormatError(`${where}: the index's codecs must be a list of objects`);
    }
    const names = codecs.map((c) => c.name);
    const listed = JSON.stringify(names).slice(0, 200);
    const serializer = names.indexOf("bytes");
    if (serializer < 0) {
        throw new ReferenceFormatError(`${where}: index arrays need the 'bytes' serializer, not ${listed}`);
    }
    const out = [];
    for (const codec of codecs.slice(0, serializer)) {
        const order = isObject(codec.configuration) ? codec.configuration.order : undefined;
        const isPermutation = Array.isArray(order) &&
            order.length === ndim &&
            [...order].sort((a, b) => a - b).every((axis, i) => axis === i);
        if (codec.name !== "transpose" || out.length > 0 || !isPermutation) {
            throw new ReferenceFormatError(`${where}: index array codecs ${listed}`);
        }
        out.push({ name: "transpose", configuration: { order: [...order] } });
    }
    const configuration = codecs[serializer].configuration ?? {};
    const endian = isObject(configuration) ? (configuration.endian ?? "little") : undefined;
    if (endian !== "little" && endian !== "big") {
        throw new ReferenceFormatError(`${where}: index byte order ${JSON.stringify(endian)}`);
    }
    out.push({ name: "bytes", configuration: { endian } });
    const after = codecs.slice(serializer + 1);
    const compressor = after.length === 1 ? COMPRESSORS[String(after[0]?.name)] : undefined;
    if (after.length > 1 || (after.length === 1 && compressor === undefined)) {
        throw new ReferenceFormatError(`${where}: index array codecs ${listed}; after 'bytes' an index may use one of ` +
            `${Object.keys(COMPRESSORS).sort().join(", ")}`);
    }
    if (compressor !== undefined) {
        const given = after[0].configuration;
        out.push({ name: compressor, configuration: isObject(given) ? given : {} });
    }
    return out;
}
/**
 * The fill value must be a uint64. It is never read (every index chunk must exist), so a value
 * that a JSON writer without 64-bit integers rounded (2^64 - 1 becomes 18446744073709552000)
 * passes too.
 */
function checkFill(fill, where) {
    const value = typeof fill === "number"
        ? fill
        : typeof fill === "string" && /^\d{1,20}$/.test(fill)
            ? Number(fill)
            : NaN;
    if (!Number.isInteger(value) || value < 0 || value > 2 ** 64) {
        throw new ReferenceFormatError(`${where}: the index's fill value ${JSON.stringify(fill)?.slice(0, 40)} is not a uint64`);
    }
}
