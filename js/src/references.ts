/**
 * The reference file, read once into what lookups need: refs, templates, compiled gen entries,
 * indexes, selections and sources, checked by the rules of the Python reader
 * (`shadowzarr_spec.parse`). Every section but `refs` is checked when the file is opened; a key
 * of refs and its value are checked when the key is looked up (a file may hold millions, and
 * listing a million keys alone costs a second), and the value normalised into one of three typed
 * references, so nothing downstream asks "is this a list of one or three?".
 */
import { base64Decode, utf8Encode } from "./bytes.js";
import { ReferenceFormatError } from "./errors.js";
import { GenEntry, type GenEntryJson } from "./gen.js";
import { checkKey, checkRelativePath } from "./keys.js";
import { expandNamedTemplates } from "./template.js";
import { type Selection, validateSelection } from "./byte-map.js";

export type Reference =
  | { readonly kind: "inline"; readonly bytes: Uint8Array }
  | { readonly kind: "file"; readonly url: string }
  | {
      readonly kind: "range";
      readonly url: string;
      readonly offset: number;
      readonly size: number;
    };

export interface RfsJson {
  version?: number;
  templates?: Record<string, string>;
  refs?: Record<string, unknown>;
  gen?: GenEntryJson[];
  indexes?: Record<string, { url: string; index: string; files?: Record<string, string> }>;
  selections?: Record<string, { record_size: number; keep: [number, number][] }>;
  sources?: Record<string, { size?: number | null; etag?: string | null }>;
}

export interface IndexEntry {
  /** The data file's URL, templates expanded. */
  readonly url: string;
  readonly index: string;
  /** Files of the index array carried in refs.json (key in the index array → bytes), so a
   * small index costs no request of its own; the same bytes are stored under `index`. */
  readonly files: ReadonlyMap<string, Uint8Array>;
}

export interface SourceRecord {
  readonly size?: number;
  readonly etag?: string;
}

const KNOWN_KEYS = new Set([
  "version",
  "templates",
  "refs",
  "gen",
  "indexes",
  "selections",
  "sources",
]);

/** An index entry's `files`: each a key of the index array (relative) and its bytes. */
function indexFiles(path: string, raw: unknown): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  if (raw === undefined) return files;
  if (!isObject(raw))
    throw new ReferenceFormatError(`'files' of the index of ${path} must be an object`);
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value !== "string") {
      throw new ReferenceFormatError(`'files' of the index of ${path} must map keys to strings`);
    }
    checkRelativePath(key);
    files.set(key, inlineBytes(value));
  }
  return files;
}

/** Inline bytes of a string value: "base64:…" is base64, anything else UTF-8 text. */
export function inlineBytes(value: string): Uint8Array {
  return value.startsWith("base64:") ? base64Decode(value.slice(7)) : utf8Encode(value);
}

/** The longest ETag a reference may record (the format's rule, as `shadowzarr_spec.etags`). */
export const MAX_ETAG_LENGTH = 1024;
const ENTITY_TAG = /^(?:(?:W\/)?"[\x21\x23-\x7e]*"|[\x21\x23-\x7e]+)$/;

/**
 * Whether `value` is an ETag a reference may record: `"opaque"`, `W/"opaque"` or a bare
 * `opaque` of visible ASCII other than `"`, at most `MAX_ETAG_LENGTH` characters. It is sent
 * back as `If-Match`, so no whitespace, control byte or non-ASCII may break its header line.
 */
export function isEntityTag(value: string): boolean {
  return value.length <= MAX_ETAG_LENGTH && ENTITY_TAG.test(value);
}

/** A value from a reference file, quoted with its control bytes escaped, cut at 120 chars. */
function shownValue(value: unknown): string {
  const text = typeof value === "string" ? value : String(value);
  const shown = JSON.stringify(text.slice(0, 120)).replace(/\x7f/g, "\\u007f");
  return text.length > 120 ? `${shown}...` : shown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function section(document: Record<string, unknown>, name: string): Record<string, unknown> {
  const value = document[name] === undefined ? {} : document[name];
  if (!isObject(value)) throw new ReferenceFormatError(`'${name}' must be an object`);
  return value;
}

export class References {
  readonly version: number;
  readonly templates: Readonly<Record<string, string>>;
  readonly refs: Readonly<Record<string, unknown>>;
  readonly gen: readonly GenEntry[];
  readonly indexes: ReadonlyMap<string, IndexEntry>;
  readonly selections: ReadonlyMap<string, Selection>;
  readonly sources: ReadonlyMap<string, SourceRecord>;

  constructor(json: RfsJson) {
    if (!isObject(json)) throw new ReferenceFormatError("a reference file must hold a JSON object");
    let document = json as Record<string, unknown>;
    if (!("refs" in document) && !("version" in document)) {
      document = { version: 0, refs: document }; // kerchunk version 0: the refs alone
    }
    const version = document.version ?? 1;
    if (version !== 0 && version !== 1 && version !== 2) {
      throw new ReferenceFormatError(
        `unsupported reference file version ${JSON.stringify(version)}`,
      );
    }
    this.version = Math.max(version, 1);
    const unknown = Object.keys(document).filter((k) => !KNOWN_KEYS.has(k));
    if (unknown.length > 0) {
      throw new ReferenceFormatError(`unknown top-level keys in reference file: ${unknown.sort()}`);
    }
    const templates = section(document, "templates");
    for (const value of Object.values(templates)) {
      if (typeof value !== "string" || value.includes("{{")) {
        throw new ReferenceFormatError("'templates' must map names to strings without '{{'");
      }
    }
    this.templates = templates as Record<string, string>;
    this.refs = section(document, "refs");
    const gen = document.gen === undefined ? [] : document.gen;
    if (!Array.isArray(gen)) throw new ReferenceFormatError("'gen' must be a list");
    this.gen = gen.map((entry) => new GenEntry(entry as GenEntryJson, this.templates));
    this.indexes = new Map(
      Object.entries(section(document, "indexes")).map(([path, entry]) => {
        checkKey(path);
        const e = entry as { url?: unknown; index?: unknown; files?: unknown };
        if (!isObject(entry) || typeof e.url !== "string" || typeof e.index !== "string") {
          throw new ReferenceFormatError(`index of ${path} must hold string 'url' and 'index'`);
        }
        if (!e.index.includes("://")) checkRelativePath(e.index);
        const url = expandNamedTemplates(e.url, this.templates, true);
        return [path, { url, index: e.index, files: indexFiles(path, e.files) }];
      }),
    );
    this.selections = new Map(
      Object.entries(section(document, "selections")).map(([path, s]) => {
        checkKey(path);
        return [path, validateSelection(path, s)];
      }),
    );
    this.sources = new Map(
      Object.entries(section(document, "sources")).map(([url, entry]) => {
        if (!isObject(entry)) throw new ReferenceFormatError(`source ${url} must be an object`);
        const { size, etag } = entry as { size?: unknown; etag?: unknown };
        if (size != null && (!Number.isSafeInteger(size) || (size as number) < 0)) {
          throw new ReferenceFormatError(`source ${url}: size must be a non-negative integer`);
        }
        if (etag != null && (typeof etag !== "string" || !isEntityTag(etag))) {
          throw new ReferenceFormatError(
            `source ${url}: etag must be an ETag such as '"abc"' or 'W/"abc"' (visible ASCII, ` +
              `no whitespace or control byte), not ${shownValue(etag)}`,
          );
        }
        const record: SourceRecord = {
          ...(size != null ? { size: size as number } : {}),
          ...(etag != null ? { etag: etag as string } : {}),
        };
        return [url, record];
      }),
    );
    if (this.version < 2 && (this.indexes.size > 0 || this.selections.size > 0)) {
      throw new ReferenceFormatError(
        "a reference file with indexes or selections must be version 2",
      );
    }
  }

  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.refs, key);
  }

  /** The reference stored in refs for `key` (URLs with templates expanded, not yet resolved). */
  lookup(key: string): Reference | undefined {
    if (!this.has(key)) return undefined;
    checkKey(key);
    const value = this.refs[key];
    if (typeof value === "string") return { kind: "inline", bytes: inlineBytes(value) };
    if (Array.isArray(value) && (value.length === 1 || value.length === 3)) {
      const [url, offset, size] = value as unknown[];
      if (typeof url !== "string" || url === "") {
        throw new ReferenceFormatError(`reference ${key}: the URL must be a non-empty string`);
      }
      const expanded = expandNamedTemplates(url, this.templates, true);
      if (value.length === 1) return { kind: "file", url: expanded };
      if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(size)) {
        throw new ReferenceFormatError(`reference ${key}: offset and size must be integers`);
      }
      const [o, s] = [offset as number, size as number];
      if (o < 0 || s < 0 || o + s > Number.MAX_SAFE_INTEGER) {
        throw new ReferenceFormatError(`reference ${key}: offset ${o} and size ${s} out of range`);
      }
      return { kind: "range", url: expanded, offset: o, size: s };
    }
    throw new ReferenceFormatError(
      `reference ${key} must be a string, [url] or [url, offset, size], got ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  }

  /** The reference a gen entry generates for `key`, if any. */
  generate(key: string): Reference | undefined {
    for (const entry of this.gen) {
      const r = entry.resolve(key);
      if (r !== undefined) return { kind: "range", url: r.url, offset: r.offset, size: r.size };
    }
    return undefined;
  }

  /** Direct children (groups and arrays) of the group at `path`, from the refs keys. */
  children(): Map<string, Set<string>> {
    const tree = new Map<string, Set<string>>();
    for (const key of Object.keys(this.refs)) {
      if (!key.endsWith("/zarr.json")) continue;
      checkKey(key);
      const nodePath = key.slice(0, -"/zarr.json".length);
      const cut = nodePath.lastIndexOf("/");
      const parent = cut < 0 ? "" : nodePath.slice(0, cut);
      const name = nodePath.slice(cut + 1);
      let names = tree.get(parent);
      if (names === undefined) tree.set(parent, (names = new Set()));
      names.add(name);
    }
    return tree;
  }
}

export function stripSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, "");
}
