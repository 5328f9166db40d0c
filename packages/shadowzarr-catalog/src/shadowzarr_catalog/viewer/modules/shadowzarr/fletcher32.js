/**
 * The `numcodecs.fletcher32` codec HDF5's fletcher32 filter maps to: a 4-byte checksum stored
 * little-endian after the data. zarrita lacks it; it is registered with zarrita's codec registry
 * when this package is imported, and a checksum that does not match is an error.
 */
import * as zarr from "zarrita";
/** HDF5's Fletcher-32: 16-bit big-endian words, sums folded every 360 words (uint32 wrap). */
export function fletcher32(data) {
    let sum1 = 0;
    let sum2 = 0;
    let words = data.length >>> 1;
    let i = 0;
    while (words > 0) {
        let block = words > 360 ? 360 : words;
        words -= block;
        while (block-- > 0) {
            sum1 = (sum1 + ((data[i] << 8) | data[i + 1])) >>> 0;
            sum2 = (sum2 + sum1) >>> 0;
            i += 2;
        }
        sum1 = ((sum1 & 0xffff) + (sum1 >>> 16)) >>> 0;
        sum2 = ((sum2 & 0xffff) + (sum2 >>> 16)) >>> 0;
    }
    if (data.length % 2 === 1) {
        sum1 = (sum1 + (data[i] << 8)) >>> 0;
        sum2 = (sum2 + sum1) >>> 0;
        sum1 = ((sum1 & 0xffff) + (sum1 >>> 16)) >>> 0;
        sum2 = ((sum2 & 0xffff) + (sum2 >>> 16)) >>> 0;
    }
    sum1 = ((sum1 & 0xffff) + (sum1 >>> 16)) >>> 0;
    sum2 = ((sum2 & 0xffff) + (sum2 >>> 16)) >>> 0;
    return ((sum2 << 16) | sum1) >>> 0;
}
export class Fletcher32ChecksumError extends Error {
    name = "Fletcher32ChecksumError";
}
export class Fletcher32Codec {
    kind = "bytes_to_bytes";
    static fromConfig() {
        return new Fletcher32Codec();
    }
    encode() {
        throw new Error("numcodecs.fletcher32: this store is read-only");
    }
    decode(bytes) {
        if (bytes.length < 4)
            throw new Fletcher32ChecksumError("chunk shorter than its checksum");
        const n = bytes.length - 4;
        const stored = new DataView(bytes.buffer, bytes.byteOffset + n, 4).getUint32(0, true);
        const computed = fletcher32(bytes.subarray(0, n));
        if (computed !== stored) {
            throw new Fletcher32ChecksumError(`fletcher32 checksum mismatch: stored ${stored}, computed ${computed}`);
        }
        return bytes.slice(0, n);
    }
    computeEncodedSize(decodedSize) {
        return decodedSize + 4;
    }
}
/** Add `numcodecs.fletcher32` to zarrita's (module-global) codec registry. */
export function registerFletcher32() {
    zarr.registry.set("numcodecs.fletcher32", async () => Fletcher32Codec);
}
