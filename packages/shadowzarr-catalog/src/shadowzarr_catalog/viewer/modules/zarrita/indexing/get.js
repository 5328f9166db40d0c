import { getContext } from "../hierarchy.js";
import { assertSharedArrayBufferAvailable, createBuffer, resolveSignal, } from "../util.js";
import { BasicIndexer } from "./indexer.js";
import { createQueue } from "./util.js";
function unwrap(arr, idx) {
    return ("get" in arr ? arr.get(idx) : arr[idx]);
}
export async function get(arr, selection, opts, setter) {
    if (opts.useSharedArrayBuffer) {
        assertSharedArrayBufferAvailable();
    }
    let signal = resolveSignal(opts);
    let context = getContext(arr);
    let indexer = new BasicIndexer({
        selection,
        shape: arr.shape,
        chunkShape: arr.chunks,
    });
    // Handle scalar arrays (shape=[]) directly, since the indexer yields nothing
    // for zero-dimensional arrays.
    if (arr.shape.length === 0) {
        let { data } = await arr.getChunk([], { signal }, { useSharedArrayBuffer: opts.useSharedArrayBuffer });
        // @ts-expect-error - TS can't narrow this conditional type
        return unwrap(data, 0);
    }
    let size = indexer.shape.reduce((a, b) => a * b, 1);
    let data;
    if (opts.useSharedArrayBuffer) {
        let sample = new context.TypedArray(0);
        if (!("BYTES_PER_ELEMENT" in sample)) {
            console.warn("zarrita: useSharedArrayBuffer is not supported for non-buffer-backed data types.");
            data = new context.TypedArray(size);
        }
        else {
            let buffer = createBuffer(size * sample.BYTES_PER_ELEMENT, true);
            data = new context.TypedArray(buffer, 0, size);
        }
    }
    else {
        data = new context.TypedArray(size);
    }
    let out = setter.prepare(data, indexer.shape, context.getStrides(indexer.shape, indexer.outputAxes));
    let queue = opts.createQueue?.() ?? createQueue();
    for (const { chunkCoords, mapping } of indexer) {
        queue.add(async () => {
            signal?.throwIfAborted();
            let { data, shape, stride } = await arr.getChunk(chunkCoords, { signal }, { useSharedArrayBuffer: opts.useSharedArrayBuffer });
            let chunk = setter.prepare(data, shape, stride);
            setter.setFromChunk(out, chunk, mapping);
        });
    }
    await queue.onIdle();
    // If the final out shape is empty (point selection), return a scalar.
    // @ts-expect-error - TS can't narrow this conditional type
    return indexer.shape.length === 0 ? unwrap(out.data, 0) : out;
}
