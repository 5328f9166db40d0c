/**
 * Struct arrays (HDF5 compound datasets, Zarr's `struct` data type), which zarrita 0.7.5 cannot
 * open (manzt/zarrita.js#464 adds the type). The store shows zarrita each such array as `uint8`
 * with one more axis, the bytes of one element: shape [..., itemSize], a chunk's bytes unchanged.
 * `structOf` describes the fields and `decodeStruct` turns what `zarr.get` returns into one typed
 * array per field.
 */
import { ChunkDecodeError, ReferenceFormatError } from "./errors.js";
const SIZES = {
    bool: 1,
    int8: 1,
    uint8: 1,
    int16: 2,
    uint16: 2,
    int32: 4,
    uint32: 4,
    int64: 8,
    uint64: 8,
    float16: 2,
    float32: 4,
    float64: 8,
    complex64: 8,
    complex128: 16,
};
/** The fixed-size types zarr-python writes for numpy's `U`, `S` and `V` (and in structs). */
const FIXED_SIZE_TYPES = new Set(["fixed_length_utf32", "null_terminated_bytes", "raw_bytes"]);
/**
 * `{"name": "fixed_length_utf32" | "null_terminated_bytes" | "raw_bytes", "configuration":
 * {"length_bytes": n}}`: its name and n, or undefined for other types (or a UTF-32 length that
 * is not a whole number of code points).
 */
export function fixedSizeType(dataType) {
    if (dataType === null || typeof dataType !== "object")
        return undefined;
    const { name, configuration } = dataType;
    if (typeof name !== "string" || !FIXED_SIZE_TYPES.has(name))
        return undefined;
    const size = configuration?.length_bytes;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
        return undefined;
    if (name === "fixed_length_utf32" && size % 4 !== 0)
        return undefined;
    return { name, size };
}
/** Bytes of one element of `dataType`, or undefined if this reader does not know them. */
export function itemSizeOf(dataType) {
    if (typeof dataType === "string") {
        const known = SIZES[dataType];
        if (known !== undefined)
            return known;
        const raw = /^r(\d+)$/.exec(dataType);
        return raw !== null && Number(raw[1]) % 8 === 0 ? Number(raw[1]) / 8 : undefined;
    }
    const fixed = fixedSizeType(dataType);
    if (fixed !== undefined)
        return fixed.size;
    const fields = structFields(dataType);
    return fields === undefined ? undefined : fields.reduce((n, f) => n + f.size, 0);
}
/**
 * The fields of a struct data type (`{"name": "struct", "configuration": {"fields": …}}`, each
 * field `[name, type]` or `{name, data_type}`); undefined for other types or unknown sizes.
 */
export function structFields(dataType) {
    if (dataType === null || typeof dataType !== "object" || Array.isArray(dataType))
        return undefined;
    const raw = dataType.configuration?.fields;
    if (!Array.isArray(raw))
        return undefined;
    const fields = [];
    let offset = 0;
    for (const field of raw) {
        const [name, type] = Array.isArray(field)
            ? field
            : [field?.name, field?.data_type];
        const size = itemSizeOf(type);
        if (typeof name !== "string" || size === undefined)
            return undefined;
        fields.push({ name, dataType: type, offset, size });
        offset += size;
    }
    return fields;
}
/** The layout of a struct array's metadata, or undefined when it is not a struct array. */
export function structLayout(meta) {
    const fields = structFields(meta.data_type);
    if (fields === undefined)
        return undefined;
    const codecs = (Array.isArray(meta.codecs) ? meta.codecs : []);
    const endian = codecs.find((c) => c?.name === "bytes")?.configuration?.endian;
    return {
        fields,
        itemSize: fields.reduce((n, f) => n + f.size, 0),
        littleEndian: endian !== "big",
    };
}
/** One byte every fill element repeats, when there is one (zarrita's uint8 fill value). */
export function uniformByte(fillElement) {
    const first = fillElement[0] ?? 0;
    return fillElement.every((b) => b === first) ? first : undefined;
}
/**
 * Array metadata as zarrita is shown it: uint8 with a last axis of `itemSize` bytes. A transpose
 * keeps the new axis last; the fill value is the byte the fill element repeats (else 0, and the
 * store serves missing chunks itself).
 */
export function structAsBytes(meta, layout, fillByte) {
    const shape = meta.shape;
    const grid = meta.chunk_grid;
    const chunkShape = grid?.configuration?.chunk_shape ?? shape;
    const codecs = (meta.codecs ?? []).map((codec) => {
        if (codec.name === "bytes")
            return { name: "bytes", configuration: { endian: "little" } };
        if (codec.name === "transpose" && Array.isArray(codec.configuration?.order)) {
            return {
                ...codec,
                configuration: {
                    ...codec.configuration,
                    order: [...codec.configuration.order, shape.length],
                },
            };
        }
        return codec;
    });
    return {
        ...meta,
        shape: [...shape, layout.itemSize],
        data_type: "uint8",
        chunk_grid: {
            name: "regular",
            configuration: { chunk_shape: [...chunkShape, layout.itemSize] },
        },
        fill_value: fillByte,
        codecs,
    };
}
const READERS = {
    bool: [Uint8Array, (v, at) => v.getUint8(at)],
    int8: [Int8Array, (v, at) => v.getInt8(at)],
    uint8: [Uint8Array, (v, at) => v.getUint8(at)],
    int16: [Int16Array, (v, at, l) => v.getInt16(at, l)],
    uint16: [Uint16Array, (v, at, l) => v.getUint16(at, l)],
    int32: [Int32Array, (v, at, l) => v.getInt32(at, l)],
    uint32: [Uint32Array, (v, at, l) => v.getUint32(at, l)],
    int64: [BigInt64Array, (v, at, l) => v.getBigInt64(at, l)],
    uint64: [BigUint64Array, (v, at, l) => v.getBigUint64(at, l)],
    float32: [Float32Array, (v, at, l) => v.getFloat32(at, l)],
    float64: [Float64Array, (v, at, l) => v.getFloat64(at, l)],
};
/**
 * The text of one `fixed_length_utf32` value: its code points up to the last one that is not
 * NUL (numpy strips trailing NULs, as h5py strips a fixed-length string's padding).
 */
function utf32Text(view, at, size, little) {
    let end = size / 4;
    while (end > 0 && view.getUint32(at + (end - 1) * 4, little) === 0)
        end--;
    const points = [];
    for (let i = 0; i < end; i++) {
        const point = view.getUint32(at + i * 4, little);
        if (point > 0x10ffff) {
            throw new ChunkDecodeError(`a fixed_length_utf32 value holds ${point}, not a code point`);
        }
        points.push(point);
    }
    let text = "";
    for (let i = 0; i < points.length; i += 4096) {
        text += String.fromCodePoint(...points.slice(i, i + 4096));
    }
    return text;
}
/**
 * One C-ordered typed array per field of what `zarr.get` returned for a struct array (uint8
 * with the element's bytes as last axis, any strides); a `fixed_length_utf32` field is an array
 * of strings (trailing NULs stripped, as numpy and h5py give them); nested structs and raw or
 * byte-string types are returned as the bytes of each element (a Uint8Array of `size` bytes per
 * element).
 */
export function decodeStruct(result, layout) {
    const shape = result.shape.slice(0, -1);
    if (result.shape[result.shape.length - 1] !== layout.itemSize) {
        throw new ReferenceFormatError(`not the bytes of a struct of ${layout.itemSize} bytes`);
    }
    const count = shape.reduce((a, b) => a * b, 1);
    // Copy each element's bytes out in C order, following the result's strides.
    const bytes = new Uint8Array(count * layout.itemSize);
    const byteStride = result.stride[result.stride.length - 1];
    const index = shape.map(() => 0);
    for (let k = 0; k < count; k++) {
        let at = 0;
        for (let d = 0; d < shape.length; d++)
            at += index[d] * result.stride[d];
        for (let b = 0; b < layout.itemSize; b++) {
            bytes[k * layout.itemSize + b] = result.data[at + b * byteStride];
        }
        for (let d = shape.length - 1; d >= 0; d--) {
            if (++index[d] < shape[d])
                break;
            index[d] = 0;
        }
    }
    const view = new DataView(bytes.buffer);
    const fields = {};
    for (const field of layout.fields) {
        if (fixedSizeType(field.dataType)?.name === "fixed_length_utf32") {
            const texts = new Array(count);
            for (let k = 0; k < count; k++) {
                const at = k * layout.itemSize + field.offset;
                texts[k] = utf32Text(view, at, field.size, layout.littleEndian);
            }
            fields[field.name] = texts;
            continue;
        }
        const reader = typeof field.dataType === "string" ? READERS[field.dataType] : undefined;
        if (reader === undefined) {
            const raw = new Uint8Array(count * field.size);
            for (let k = 0; k < count; k++) {
                const from = k * layout.itemSize + field.offset;
                raw.set(bytes.subarray(from, from + field.size), k * field.size);
            }
            fields[field.name] = raw;
            continue;
        }
        const [Ctor, read] = reader;
        const out = new Ctor(count);
        for (let k = 0; k < count; k++) {
            out[k] = read(view, k * layout.itemSize + field.offset, layout.littleEndian);
        }
        fields[field.name] = out;
    }
    return { shape, fields };
}
