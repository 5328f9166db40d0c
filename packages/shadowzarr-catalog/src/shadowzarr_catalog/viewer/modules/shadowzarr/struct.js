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
export function structFields(dataType, littleEndian = true) {
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
        const nested = structFields(type, littleEndian);
        const layout = nested === undefined ? undefined : { fields: nested, itemSize: size, littleEndian };
        fields.push({ name, dataType: type, offset, size, ...(layout && { layout }) });
        offset += size;
    }
    return fields;
}
/**
 * The layout of a struct array's metadata, or of a `raw_bytes` array whose records the
 * `_STRUCTURED_DTYPE` attribute describes (a malformed one is a `ReferenceFormatError`);
 * undefined for other arrays.
 */
export function structLayout(meta) {
    const codecs = (Array.isArray(meta.codecs) ? meta.codecs : []);
    const littleEndian = codecs.find((c) => c?.name === "bytes")?.configuration?.endian !== "big";
    const records = meta.attributes?.[STRUCTURED_DTYPE];
    const raw = fixedSizeType(meta.data_type);
    if (raw?.name === "raw_bytes" && records !== undefined) {
        const layout = recordLayout(records);
        if (layout.itemSize !== raw.size) {
            throw new ReferenceFormatError(`${STRUCTURED_DTYPE} describes records of ${layout.itemSize} bytes, not ${raw.size}`);
        }
        return layout;
    }
    const fields = structFields(meta.data_type, littleEndian);
    if (fields === undefined)
        return undefined;
    return { fields, itemSize: fields.reduce((n, f) => n + f.size, 0), littleEndian };
}
/** The attribute of a `raw_bytes` array that describes its records (numpy's layout). */
export const STRUCTURED_DTYPE = "_STRUCTURED_DTYPE";
/** numpy's type strings (kind and size) → Zarr's names. */
const NUMPY_NAMES = {
    b1: "bool",
    i1: "int8",
    u1: "uint8",
    i2: "int16",
    u2: "uint16",
    i4: "int32",
    u4: "uint32",
    i8: "int64",
    u8: "uint64",
    f2: "float16",
    f4: "float32",
    f8: "float64",
    c8: "complex64",
    c16: "complex128",
};
const MAX_NESTING = 32;
/**
 * A numpy type string (`"<f8"`, `">i4"`, `"|S4"`, `"|V8"`) as a Zarr data type, its size and its
 * byte order (undefined for single bytes); undefined when it is not one this reader knows.
 */
export function numpyType(form) {
    const match = /^([<>|=]?)([biufcSV])(\d{1,6})$/.exec(form);
    if (match === null)
        return undefined;
    const [, order, kind, digits] = match;
    const size = Number(digits);
    const littleEndian = order === ">" ? false : order === "<" ? true : undefined;
    if (kind === "S" || kind === "V") {
        const name = kind === "S" ? "null_terminated_bytes" : "raw_bytes";
        return { dataType: { name, configuration: { length_bytes: size } }, size };
    }
    const name = NUMPY_NAMES[`${kind}${digits}`];
    return name === undefined ? undefined : { dataType: name, size, littleEndian };
}
/**
 * The layout a `_STRUCTURED_DTYPE` attribute describes: `{"names", "formats", "offsets",
 * "itemsize"}`, each format a numpy type string, `[format, shape]` (an array field) or a nested
 * layout. Anything else, or a field outside the record, is a `ReferenceFormatError`.
 */
export function recordLayout(descr, depth = 0) {
    const bad = (why) => new ReferenceFormatError(`${STRUCTURED_DTYPE}: ${why}: ${JSON.stringify(descr).slice(0, 120)}`);
    if (depth > MAX_NESTING)
        throw bad("nested too deeply");
    const { names, formats, offsets, itemsize } = (descr ?? {});
    if (!Array.isArray(names) || !Array.isArray(formats) || !Array.isArray(offsets)) {
        throw bad("not a record layout");
    }
    if (names.length !== formats.length || names.length !== offsets.length) {
        throw bad("names, formats and offsets differ in length");
    }
    if (typeof itemsize !== "number" || !Number.isSafeInteger(itemsize) || itemsize < 0) {
        throw bad("no item size");
    }
    const fields = names.map((name, i) => {
        const offset = offsets[i];
        if (typeof name !== "string")
            throw bad("a field name is not text");
        if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
            throw bad(`field ${name} has no offset`);
        }
        const field = recordField(name, formats[i], offset, depth, bad);
        if (field.offset + field.size > itemsize)
            throw bad(`field ${name} ends past the record`);
        return field;
    });
    return { fields, itemSize: itemsize, littleEndian: true };
}
function recordField(name, form, offset, depth, bad) {
    if (typeof form === "string") {
        const type = numpyType(form);
        if (type === undefined)
            throw bad(`field ${name} has the unknown type ${form.slice(0, 20)}`);
        return { name, offset, ...type };
    }
    if (Array.isArray(form) && form.length === 2 && Array.isArray(form[1])) {
        const dims = form[1];
        if (!dims.every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) {
            throw bad(`field ${name} has a malformed shape`);
        }
        const inner = recordField(name, form[0], offset, depth + 1, bad);
        if (inner.shape !== undefined)
            throw bad(`field ${name} is an array of arrays`);
        const shape = dims;
        const size = product(shape) * inner.size;
        if (!Number.isSafeInteger(size))
            throw bad(`field ${name} is too large`);
        return { ...inner, shape, size };
    }
    if (form !== null && typeof form === "object" && !Array.isArray(form)) {
        const layout = recordLayout(form, depth + 1);
        return { name, offset, dataType: "struct", size: layout.itemSize, layout };
    }
    throw bad(`field ${name} has a malformed format`);
}
const product = (shape) => shape.reduce((a, b) => a * b, 1);
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
 * of strings (trailing NULs stripped, as numpy and h5py give them); raw or byte-string types are
 * returned as the bytes of each element (a Uint8Array of `size` bytes per element). An array
 * field of shape `s` holds `s`'s values per element, C-ordered (its shape is the field's
 * `shape`); a nested struct is decoded in turn, its `shape` the element shape and `s`.
 */
export function decodeStruct(result, layout) {
    const shape = result.shape.slice(0, -1);
    if (result.shape[result.shape.length - 1] !== layout.itemSize) {
        throw new ReferenceFormatError(`not the bytes of a struct of ${layout.itemSize} bytes`);
    }
    const count = product(shape);
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
    const starts = new Float64Array(count);
    for (let k = 0; k < count; k++)
        starts[k] = k * layout.itemSize;
    return decodeAt(bytes, starts, shape, layout, layout.littleEndian);
}
/** The fields of the records starting at `starts` (C order over `shape`) in `bytes`. */
function decodeAt(bytes, starts, shape, layout, littleEndian) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const fields = {};
    for (const field of layout.fields) {
        const per = field.shape === undefined ? 1 : product(field.shape);
        const size = per === 0 ? 0 : field.size / per;
        const at = new Float64Array(starts.length * per);
        for (let k = 0; k < starts.length; k++) {
            for (let j = 0; j < per; j++) {
                at[k * per + j] = starts[k] + field.offset + j * size;
            }
        }
        const little = field.littleEndian ?? littleEndian;
        if (field.layout !== undefined) {
            const inner = [...shape, ...(field.shape ?? [])];
            fields[field.name] = decodeAt(bytes, at, inner, field.layout, little);
        }
        else if (fixedSizeType(field.dataType)?.name === "fixed_length_utf32") {
            fields[field.name] = Array.from(at, (p) => utf32Text(view, p, size, little));
        }
        else {
            const reader = typeof field.dataType === "string" ? READERS[field.dataType] : undefined;
            if (reader === undefined) {
                const raw = new Uint8Array(at.length * size);
                at.forEach((p, k) => raw.set(bytes.subarray(p, p + size), k * size));
                fields[field.name] = raw;
            }
            else {
                const [Ctor, read] = reader;
                const out = new Ctor(at.length);
                for (let k = 0; k < at.length; k++)
                    out[k] = read(view, at[k], little);
                fields[field.name] = out;
            }
        }
    }
    return { shape, fields };
}
