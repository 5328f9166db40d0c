/**
 * Variable-length sequences of numbers (HDF5 `vlen` of a number type, PyTables' VLArray), which
 * the format stores as `variable_length_bytes` arrays (codec `vlen-bytes`), each element the
 * sequence's values as bytes of the numpy type in the `_VLEN_DTYPE` attribute (`"<f4"`).
 *
 * zarrita 0.7.5 knows neither the data type nor the codec. The store shows zarrita such an array
 * as `string` with the codec `shadowzarr.vlen-bytes`, which this module registers: `zarr.get`
 * gives one Uint8Array per element, and `decodeSequences` one typed array per element.
 */
import * as zarr from "zarrita";
import { ChunkDecodeError, ReferenceFormatError } from "./errors.js";
import { numpyType } from "./struct.js";
/** The attribute naming the numpy type of a sequence's values. */
export const VLEN_DTYPE = "_VLEN_DTYPE";
/** The name of the codec the store shows zarrita in place of `vlen-bytes`. */
export const VLEN_BYTES_CODEC = "shadowzarr.vlen-bytes";
const ARRAYS = {
    bool: Uint8Array,
    int8: Int8Array,
    uint8: Uint8Array,
    int16: Int16Array,
    uint16: Uint16Array,
    int32: Int32Array,
    uint32: Uint32Array,
    int64: BigInt64Array,
    uint64: BigUint64Array,
    float32: Float32Array,
    float64: Float64Array,
};
const READ = {
    bool: (v, at) => v.getUint8(at),
    int8: (v, at) => v.getInt8(at),
    uint8: (v, at) => v.getUint8(at),
    int16: (v, at, l) => v.getInt16(at, l),
    uint16: (v, at, l) => v.getUint16(at, l),
    int32: (v, at, l) => v.getInt32(at, l),
    uint32: (v, at, l) => v.getUint32(at, l),
    int64: (v, at, l) => v.getBigInt64(at, l),
    uint64: (v, at, l) => v.getBigUint64(at, l),
    float32: (v, at, l) => v.getFloat32(at, l),
    float64: (v, at, l) => v.getFloat64(at, l),
};
/** The type a `_VLEN_DTYPE` attribute names; anything else is a `ReferenceFormatError`. */
export function sequenceType(attribute) {
    const type = typeof attribute === "string" ? numpyType(attribute) : undefined;
    const name = type?.dataType;
    if (type === undefined || typeof name !== "string" || ARRAYS[name] === undefined) {
        throw new ReferenceFormatError(`${VLEN_DTYPE} ${JSON.stringify(attribute)?.slice(0, 40)} is not a numpy number type`);
    }
    return { dataType: name, itemSize: type.size, littleEndian: type.littleEndian ?? true };
}
/** One sequence's values from its stored bytes. */
export function sequenceValues(bytes, type) {
    if (bytes.length % type.itemSize !== 0) {
        throw new ReferenceFormatError(`${bytes.length} bytes are not ${type.dataType} values`);
    }
    const n = bytes.length / type.itemSize;
    const Ctor = ARRAYS[type.dataType];
    const read = READ[type.dataType];
    const out = new Ctor(n);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < n; i++)
        out[i] = read(view, i * type.itemSize, type.littleEndian);
    return out;
}
/**
 * One typed array per element of what `zarr.get` returned for a sequence array (C order over
 * `shape`); an element zarrita filled (a chunk never written) is an empty sequence.
 */
export function decodeSequences(result, type) {
    const shape = [...result.shape];
    const count = shape.reduce((a, b) => a * b, 1);
    const sequences = new Array(count);
    const index = shape.map(() => 0);
    for (let k = 0; k < count; k++) {
        let at = 0;
        for (let d = 0; d < shape.length; d++) {
            at += index[d] * result.stride[d];
        }
        const item = result.data[at];
        if (item instanceof Uint8Array)
            sequences[k] = sequenceValues(item, type);
        else if (item === "" || item === undefined)
            sequences[k] = sequenceValues(new Uint8Array(0), type);
        else
            throw new ReferenceFormatError("a sequence array element is not bytes");
        for (let d = shape.length - 1; d >= 0; d--) {
            if (++index[d] < shape[d])
                break;
            index[d] = 0;
        }
    }
    return { shape, sequences };
}
/**
 * `vlen-bytes` (numcodecs' framing: a uint32 count, then each item's uint32 length and bytes,
 * little-endian), decoding to one Uint8Array per element. A frame that does not hold the chunk's
 * elements is a `ChunkDecodeError`.
 */
export class VlenBytesCodec {
    kind = "array_to_bytes";
    #shape;
    constructor(shape) {
        this.#shape = [...shape];
    }
    static fromConfig(_, meta) {
        return new VlenBytesCodec(meta.shape);
    }
    encode() {
        throw new Error(`${VLEN_BYTES_CODEC}: this store is read-only`);
    }
    decode(bytes) {
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        const expected = this.#shape.reduce((a, b) => a * b, 1);
        if (bytes.length < 4 || view.getUint32(0, true) !== expected) {
            throw new ChunkDecodeError(`a vlen-bytes chunk does not hold its ${expected} elements`);
        }
        const data = new Array(expected);
        let at = 4;
        for (let i = 0; i < expected; i++) {
            if (at + 4 > bytes.length)
                throw new ChunkDecodeError("a vlen-bytes chunk ends early");
            const length = view.getUint32(at, true);
            at += 4;
            if (at + length > bytes.length)
                throw new ChunkDecodeError("a vlen-bytes item ends early");
            data[i] = bytes.slice(at, at + length);
            at += length;
        }
        if (at !== bytes.length)
            throw new ChunkDecodeError("a vlen-bytes chunk holds more than its items");
        const stride = this.#shape.map((_, d) => this.#shape.slice(d + 1).reduce((a, b) => a * b, 1));
        return { data, shape: this.#shape, stride };
    }
}
/** Add `shadowzarr.vlen-bytes` to zarrita's (module-global) codec registry. */
export function registerVlenBytes() {
    zarr.registry.set(VLEN_BYTES_CODEC, async () => VlenBytesCodec);
}
