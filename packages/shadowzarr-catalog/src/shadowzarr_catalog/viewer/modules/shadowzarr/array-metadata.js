/**
 * The parts of an array's zarr.json the store itself needs: where its chunk keys start, how
 * big an uncompressed chunk is and which bytes pad it, and how chunk keys encode coordinates.
 */
import { base64Decode } from "./bytes.js";
import { ReferenceFormatError } from "./errors.js";
import { fixedSizeType, itemSizeOf, structLayout, uniformByte, } from "./struct.js";
/** Codecs that leave a chunk's bytes a plain, full-size image of its elements. */
const PADDABLE_CODECS = new Set(["bytes", "transpose"]);
const FLETCHER32_NAME = "numcodecs.fletcher32";
/** Codecs that keep a chunk's size (array-to-array and size-keeping byte transforms). */
const SIZE_KEEPING_CODECS = new Set([
    "transpose",
    "numcodecs.shuffle",
    "numcodecs.delta",
    "numcodecs.bitround",
    "numcodecs.quantize",
    "numcodecs.fixedscaleoffset",
    "numcodecs.astype",
    "numcodecs.packbits",
    "imagecodecs_delta",
]);
/** Checksum codecs: they add four bytes. */
const CHECKSUM_CODECS = new Set([
    "crc32c",
    "numcodecs.crc32",
    "numcodecs.crc32c",
    "numcodecs.adler32",
    FLETCHER32_NAME,
    "numcodecs.jenkins_lookup3",
]);
/** General-purpose compressors: incompressible data grows by at most about half plus headers. */
const COMPRESSOR_CODECS = new Set([
    "gzip",
    "zstd",
    "blosc",
    "numcodecs.zlib",
    "numcodecs.gzip",
    "numcodecs.bz2",
    "numcodecs.lzma",
    "numcodecs.blosc",
    "numcodecs.zstd",
    "numcodecs.lz4",
    "imagecodecs_blosc",
    "imagecodecs_zstd",
    "imagecodecs_lz4h5",
    "imagecodecs_zlib",
    "imagecodecs_deflate",
    "imagecodecs_lz4",
    "imagecodecs_lzma",
    "imagecodecs_bz2",
    "imagecodecs_lzw",
    "imagecodecs_packbits",
    "imagecodecs_lzf",
]);
/**
 * The most bytes `codecs` write for a chunk of `chunkBytes` bytes, or undefined when a codec's
 * growth is unknown. Generous on purpose: it only stops references claiming absurd sizes.
 */
export function storedBoundOf(codecs, chunkBytes) {
    let size = chunkBytes;
    let serialized = false;
    for (const codec of codecs) {
        const name = codec.name;
        if (name === "bytes")
            serialized = true;
        else if (SIZE_KEEPING_CODECS.has(name))
            continue;
        else if (CHECKSUM_CODECS.has(name))
            size += 4;
        else if (COMPRESSOR_CODECS.has(name) || name.startsWith("shadowzarr.hdf5_")) {
            size = size + Math.floor(size / 2) + 65536;
        }
        else
            return undefined;
    }
    return serialized ? size : undefined;
}
export const FLETCHER32 = FLETCHER32_NAME;
/** Whether the last (outermost) of `codecs` is the Fletcher-32 checksum. */
export function endsWithFletcher32(codecs) {
    return (Array.isArray(codecs) &&
        codecs.length > 0 &&
        codecs[codecs.length - 1]?.name === FLETCHER32);
}
function writeNumber(view, dataType, value, little, at = 0) {
    switch (dataType) {
        case "bool":
        case "uint8":
            view.setUint8(at, Number(value));
            return;
        case "int8":
            view.setInt8(at, Number(value));
            return;
        case "int16":
            view.setInt16(at, Number(value), little);
            return;
        case "uint16":
            view.setUint16(at, Number(value), little);
            return;
        case "int32":
            view.setInt32(at, Number(value), little);
            return;
        case "uint32":
            view.setUint32(at, Number(value), little);
            return;
        case "int64":
            view.setBigInt64(at, BigInt(value), little);
            return;
        case "uint64":
            view.setBigUint64(at, BigInt(value), little);
            return;
        case "float32":
            view.setFloat32(at, Number(value), little);
            return;
        case "float64":
            view.setFloat64(at, Number(value), little);
            return;
        default:
            throw new ReferenceFormatError(`cannot encode a fill value of type ${dataType}`);
    }
}
const FLOAT_WORDS = {
    NaN: NaN,
    Infinity: Infinity,
    "-Infinity": -Infinity,
};
/** The bytes of one element equal to `fill`, or undefined if this reader cannot encode it. */
export function fillElementBytes(dataType, fill, itemSize, little) {
    const out = new Uint8Array(itemSize);
    if (fill === null || fill === undefined || fill === 0 || fill === false)
        return out;
    const view = new DataView(out.buffer);
    if (typeof dataType !== "string") {
        const fixed = fixedSizeType(dataType);
        if (fixed !== undefined)
            return fixedSizeFill(fixed.name, fill, itemSize, little);
        if (typeof fill === "string" && fill.startsWith("base64:"))
            return base64Decode(fill.slice(7));
        return structFillBytes(dataType, fill, itemSize, little);
    }
    if (/^r\d+$/.test(dataType)) {
        return Array.isArray(fill) && fill.length === itemSize ? Uint8Array.from(fill) : undefined;
    }
    if (dataType === "float16")
        return undefined;
    const isComplex = dataType.startsWith("complex");
    const parts = isComplex ? (Array.isArray(fill) ? fill : undefined) : [fill];
    if (parts === undefined)
        return undefined;
    const partType = dataType === "complex64" ? "float32" : dataType === "complex128" ? "float64" : dataType;
    const partSize = isComplex ? itemSize / 2 : itemSize;
    for (let i = 0; i < parts.length; i++) {
        const value = parts[i];
        const at = i * partSize;
        if (typeof value === "string" && value.startsWith("0x")) {
            // Raw bits of a float (NaN payloads), most significant byte first.
            const bits = BigInt(value);
            for (let b = 0; b < partSize; b++) {
                const byte = Number((bits >> BigInt(8 * b)) & 0xffn);
                out[little ? at + b : at + partSize - 1 - b] = byte;
            }
        }
        else if (typeof value === "string" && value in FLOAT_WORDS) {
            writeNumber(view, partType, FLOAT_WORDS[value], little, at);
        }
        else if (typeof value === "string" && /^-?\d+$/.test(value)) {
            writeNumber(view, partType, BigInt(value), little, at);
        }
        else if (typeof value === "number" || typeof value === "bigint") {
            writeNumber(view, partType, value, little, at);
        }
        else if (typeof value === "boolean") {
            writeNumber(view, partType, value ? 1 : 0, little, at);
        }
        else {
            return undefined;
        }
    }
    return out;
}
/**
 * The fill element of a fixed-size text or bytes type, as zarr-python writes it: the text for
 * `fixed_length_utf32` (UTF-32 code points, NUL-padded), base64 for the bytes types (padded
 * with zero bytes); undefined when it does not fit.
 */
function fixedSizeFill(name, fill, itemSize, little) {
    if (typeof fill !== "string")
        return undefined;
    const out = new Uint8Array(itemSize);
    if (name === "fixed_length_utf32") {
        const points = [...fill].map((c) => c.codePointAt(0));
        if (points.length * 4 > itemSize)
            return undefined;
        const view = new DataView(out.buffer);
        points.forEach((point, i) => view.setUint32(i * 4, point, little));
        return out;
    }
    let bytes;
    try {
        bytes = base64Decode(fill);
    }
    catch {
        return undefined;
    }
    if (bytes.length > itemSize)
        return undefined;
    out.set(bytes);
    return out;
}
/** A struct fill value given as {field: value}: each field encoded in turn (packed). */
function structFillBytes(dataType, fill, itemSize, little) {
    const fields = dataType?.configuration?.fields;
    if (!Array.isArray(fields) || fill === null || typeof fill !== "object")
        return undefined;
    const out = new Uint8Array(itemSize);
    let at = 0;
    for (const field of fields) {
        const [name, type] = Array.isArray(field)
            ? field
            : [field.name, field.data_type];
        const size = itemSizeOf(type);
        if (size === undefined || typeof name !== "string")
            return undefined;
        const part = fillElementBytes(type, fill[name], size, little);
        if (part === undefined)
            return undefined;
        out.set(part, at);
        at += size;
    }
    return at === itemSize ? out : undefined;
}
/** Read the parts of a parsed array zarr.json the store needs. */
export function arrayInfoFromMetadata(path, meta) {
    const shape = (meta.shape ?? []);
    const grid = meta.chunk_grid;
    const chunkShape = grid?.configuration?.chunk_shape ?? shape;
    const encoding = meta.chunk_key_encoding;
    const defaultEncoding = (encoding?.name ?? "default") === "default";
    const separator = encoding?.configuration?.separator ?? (defaultEncoding ? "/" : ".");
    const codecs = (meta.codecs ?? []);
    const info = {
        path,
        shape,
        chunkShape,
        separator,
        defaultEncoding,
        checksummed: endsWithFletcher32(codecs),
    };
    const attributes = meta.attributes;
    if (meta.data_type === "variable_length_bytes" && attributes?._VLEN_DTYPE !== undefined) {
        info.vlenDtype = attributes._VLEN_DTYPE;
    }
    const layout = structLayout(meta);
    if (layout !== undefined) {
        const element = fillElementBytes(meta.data_type, meta.fill_value, layout.itemSize, layout.littleEndian);
        info.struct = { layout, fillByte: element === undefined ? undefined : uniformByte(element) };
    }
    if (codecs.every((c) => PADDABLE_CODECS.has(c.name))) {
        const itemSize = itemSizeOf(meta.data_type);
        const bytesCodec = codecs.find((c) => c.name === "bytes");
        const little = (bytesCodec?.configuration?.endian ?? "little") !== "big";
        if (itemSize !== undefined) {
            const fillElement = fillElementBytes(meta.data_type, meta.fill_value, itemSize, little);
            if (fillElement !== undefined && fillElement.length === itemSize) {
                const elements = chunkShape.reduce((a, b) => a * b, 1);
                const order = codecs.find((c) => c.name === "transpose")?.configuration?.order;
                info.padding = {
                    chunkBytes: elements * itemSize,
                    fillElement,
                    ...(Array.isArray(order) ? { order: order } : {}),
                };
            }
        }
    }
    const itemSize = layout?.itemSize ?? itemSizeOf(meta.data_type);
    if (itemSize !== undefined) {
        const elements = chunkShape.reduce((a, b) => a * b, 1);
        info.storedBound = storedBoundOf(codecs, elements * itemSize);
    }
    return info;
}
/**
 * The fewest bytes chunk `coords` of an uncompressed array may hold (the format's short-chunk
 * rule): everything up to and including its last element inside the array, in stored order
 * (the `transpose` codec's order); bytes after that belong to elements past the array's end,
 * which Zarr discards. A chunk wholly outside the array needs all of its bytes.
 */
export function neededBytes(info, coords) {
    const padding = info.padding;
    if (padding === undefined)
        return 0;
    const chunk = info.chunkShape;
    const extent = chunk.map((c, i) => Math.min(c, info.shape[i] - (coords[i] ?? 0) * c));
    if (extent.some((e) => e <= 0))
        return padding.chunkBytes;
    const order = padding.order ?? chunk.map((_, i) => i);
    const elements = chunk.reduce((a, b) => a * b, 1);
    const itemSize = elements > 0 ? padding.chunkBytes / elements : 0;
    let last = 0; // index, in stored order, of the chunk's last element inside the array
    let step = 1;
    for (let i = order.length - 1; i >= 0; i--) {
        const axis = order[i];
        last += (extent[axis] - 1) * step;
        step *= chunk[axis];
    }
    return (last + 1) * itemSize;
}
/** Chunk coordinates from the part of a key after the array path, or undefined. */
export function chunkCoordsFromKey(info, suffix) {
    let rest = suffix;
    if (info.defaultEncoding) {
        if (rest === "c")
            return info.shape.length === 0 ? [] : undefined;
        if (!rest.startsWith("c" + info.separator))
            return undefined;
        rest = rest.slice(2);
    }
    const parts = rest.split(info.separator);
    if (parts.length !== info.shape.length)
        return undefined;
    const coords = parts.map(Number);
    return coords.every((c, i) => Number.isInteger(c) && String(c) === parts[i]) ? coords : undefined;
}
