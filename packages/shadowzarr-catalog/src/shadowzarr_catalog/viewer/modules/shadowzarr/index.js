/**
 * shadowzarr for JavaScript: a zarrita.js store that reads shadowzarr reference files.
 * Importing it registers the `numcodecs.fletcher32` and `shadowzarr.vlen-bytes` codecs with
 * zarrita.
 *
 * @module
 */
import { registerFletcher32 } from "./fletcher32.js";
import { registerVlenBytes } from "./sequences.js";
registerFletcher32();
registerVlenBytes();
export { BYTES_CONVENTION, COMPLEX_CONVENTION, Complex, decodeAttributes, NON_FINITE_CONVENTION, } from "./attributes.js";
export { compileExpression } from "./arithmetic.js";
export { createDandiResolver, followRedirectOnce, isDandiDownloadUrl } from "./dandi.js";
export { ChunkDecodeError, ChunkSizeError, GenExpressionError, RangeResponseError, ReferenceFormatError, ShadowzarrError, SourceChangedError, SourceError, SourceUnavailableError, UnsafePathError, } from "./errors.js";
export { fletcher32, Fletcher32ChecksumError, Fletcher32Codec, registerFletcher32, } from "./fletcher32.js";
export { GroupLayout } from "./grouped-view.js";
export { normalizeMetadataText, parseJson, quoteLargeFillValues, quoteNonFinite } from "./json.js";
export { decodeSequences, registerVlenBytes, sequenceType, VLEN_BYTES_CODEC, VLEN_DTYPE, VlenBytesCodec, } from "./sequences.js";
export { decodeStruct, recordLayout, STRUCTURED_DTYPE, structFields, } from "./struct.js";
export { DEFAULT_MAX_MERGE_SIZE, DEFAULT_MERGE_GAP, ReferenceStore, } from "./store.js";
