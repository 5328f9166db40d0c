/**
 * Errors raised by the shadowzarr store. Every error is a `ShadowzarrError`; the tree follows
 * the Python one (`shadowzarr_spec.errors`), and the conformance suite maps each Python class to
 * the name of the class raised here (`shadowzarr_spec/conformance/errors.json`):
 *
 * ShadowzarrError
 * ├── ReferenceFormatError      the references are malformed or use something this reader lacks
 * │   ├── GenExpressionError    a gen template is not the allowed integer arithmetic
 * │   └── UnsafePathError       a key or index path would escape where it may point
 * ├── SourceError               reading a source failed; raised itself when a source is shorter
 * │   │                         than its reference (Python: SourceError)
 * │   ├── SourceChangedError    a source differs from what the references recorded
 * │   │                         (412 on If-Match, other total size, other ETag)
 * │   ├── SourceUnavailableError  a source could not be fetched (404, 5xx, network failure,
 * │   │                         or CORS in a browser)
 * │   └── RangeResponseError    a server answered a range request wrongly (200 instead of 206,
 * │                             another Content-Range, a body shorter than announced)
 * └── ChunkDecodeError          a chunk's bytes are corrupt: more than its array's chunk holds,
 *                               or a Fletcher-32 checksum that does not match
 *
 * `ChunkSizeError` is the earlier name of `ChunkDecodeError` (the same class).
 */
export class ShadowzarrError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = new.target.name;
    }
}
export class ReferenceFormatError extends ShadowzarrError {
}
export class GenExpressionError extends ReferenceFormatError {
}
export class UnsafePathError extends ReferenceFormatError {
}
export class SourceError extends ShadowzarrError {
    url;
    constructor(message, url, options) {
        super(message, options);
        this.url = url;
    }
}
export class SourceChangedError extends SourceError {
    constructor(message, url, options) {
        super(message, url, options);
    }
}
export class SourceUnavailableError extends SourceError {
    status;
    constructor(message, url, status, options) {
        super(message, url, options);
        this.status = status;
    }
}
export class RangeResponseError extends SourceError {
    constructor(message, url, options) {
        super(message, url, options);
    }
}
export class ChunkDecodeError extends ShadowzarrError {
}
/** @deprecated The earlier name of {@link ChunkDecodeError}. */
export const ChunkSizeError = ChunkDecodeError;
