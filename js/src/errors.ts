/**
 * Errors raised by the shadowzarr store. Every error is a `ShadowzarrError`:
 *
 * ShadowzarrError
 * ├── ReferenceFormatError    the references are malformed or use something this reader lacks
 * ├── SourceChangedError      a source file differs from what the references recorded
 * │                           (412 on If-Match, other total size, other ETag)
 * ├── SourceUnavailableError  a source could not be fetched (404, 5xx, network or CORS failure)
 * ├── RangeResponseError      a server answered a range request wrongly (200 instead of 206,
 * │                           another Content-Range, a body shorter than announced)
 * └── ChunkSizeError          a chunk's bytes do not fit its array (too long, or short for an
 *                             array that cannot be padded)
 */
export class ShadowzarrError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ReferenceFormatError extends ShadowzarrError {}

export class SourceChangedError extends ShadowzarrError {
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class SourceUnavailableError extends ShadowzarrError {
  constructor(
    message: string,
    readonly url: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class RangeResponseError extends ShadowzarrError {
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class ChunkSizeError extends ShadowzarrError {}
