/**
 * The reference file, read once into what lookups need: refs, templates, compiled gen entries,
 * indexes, selections and sources. A value in refs is normalised on lookup into one of three
 * typed references, so nothing downstream asks "is this a list of one or three?".
 */
import { base64Decode, utf8Encode } from "./bytes.js";
import { ReferenceFormatError } from "./errors.js";
import { GenEntry, type GenEntryJson } from "./gen.js";
import { expandUrlTemplates } from "./template.js";
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
  indexes?: Record<string, { url: string; index: string }>;
  selections?: Record<string, { record_size: number; keep: [number, number][] }>;
  sources?: Record<string, { size?: number; etag?: string | null }>;
}

export interface IndexEntry {
  readonly url: string;
  readonly index: string;
}

/** Inline bytes of a string value: "base64:…" is base64, anything else UTF-8 text. */
export function inlineBytes(value: string): Uint8Array {
  return value.startsWith("base64:") ? base64Decode(value.slice(7)) : utf8Encode(value);
}

export class References {
  readonly version: number;
  readonly templates: Readonly<Record<string, string>>;
  readonly refs: Readonly<Record<string, unknown>>;
  readonly gen: readonly GenEntry[];
  readonly indexes: ReadonlyMap<string, IndexEntry>;
  readonly selections: ReadonlyMap<string, Selection>;
  readonly rawSources: Readonly<Record<string, { size?: number; etag?: string | null }>>;

  constructor(json: RfsJson) {
    if (json === null || typeof json !== "object") {
      throw new ReferenceFormatError("a reference file must be a JSON object");
    }
    const version = json.version ?? (json.refs === undefined ? 0 : 1);
    if (version !== 0 && version !== 1 && version !== 2) {
      throw new ReferenceFormatError(`unsupported reference file version ${String(version)}`);
    }
    this.version = version;
    this.templates = json.templates ?? {};
    this.refs = (version === 0 ? json : json.refs) as Record<string, unknown>;
    if (this.refs === null || typeof this.refs !== "object") {
      throw new ReferenceFormatError("refs must be an object");
    }
    this.gen = (json.gen ?? []).map((entry) => new GenEntry(entry));
    this.indexes = new Map(
      Object.entries(json.indexes ?? {}).map(([path, entry]) => {
        if (typeof entry?.url !== "string" || typeof entry.index !== "string") {
          throw new ReferenceFormatError(`indexes of ${path} need string url and index`);
        }
        return [stripSlashes(path), entry];
      }),
    );
    this.selections = new Map(
      Object.entries(json.selections ?? {}).map(([path, s]) => [
        stripSlashes(path),
        validateSelection(path, s),
      ]),
    );
    this.rawSources = json.sources ?? {};
  }

  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.refs, key);
  }

  /** The reference stored in refs for `key` (URLs with templates expanded, not yet resolved). */
  lookup(key: string): Reference | undefined {
    if (!this.has(key)) return undefined;
    const value = this.refs[key];
    if (typeof value === "string") return { kind: "inline", bytes: inlineBytes(value) };
    if (Array.isArray(value)) {
      const [url, offset, size] = value as unknown[];
      if (typeof url !== "string") {
        throw new ReferenceFormatError(`reference ${key}: the URL must be a string`);
      }
      const expanded = expandUrlTemplates(url, this.templates);
      if (value.length === 1) return { kind: "file", url: expanded };
      if (
        value.length === 3 &&
        Number.isSafeInteger(offset) &&
        Number.isSafeInteger(size) &&
        (offset as number) >= 0 &&
        (size as number) >= 0
      ) {
        return { kind: "range", url: expanded, offset: offset as number, size: size as number };
      }
      throw new ReferenceFormatError(`reference ${key}: expected [url] or [url, offset, size]`);
    }
    if (value !== null && typeof value === "object") {
      // Metadata written as a JSON object instead of a JSON string.
      return { kind: "inline", bytes: utf8Encode(JSON.stringify(value)) };
    }
    throw new ReferenceFormatError(`reference ${key}: unsupported value ${JSON.stringify(value)}`);
  }

  /** The reference a gen entry generates for `key`, if any. */
  generate(key: string): Reference | undefined {
    for (const entry of this.gen) {
      const r = entry.resolve(key, this.templates);
      if (r === undefined) continue;
      if (r.offset === undefined || r.size === undefined) return { kind: "file", url: r.url };
      if (r.offset < 0 || r.size < 0) {
        throw new ReferenceFormatError(`gen reference ${key} has a negative offset or length`);
      }
      return { kind: "range", url: r.url, offset: r.offset, size: r.size };
    }
    return undefined;
  }

  /** Direct children (groups and arrays) of the group at `path`, from the refs keys. */
  children(): Map<string, Set<string>> {
    const tree = new Map<string, Set<string>>();
    for (const key of Object.keys(this.refs)) {
      if (!key.endsWith("zarr.json") || key === "zarr.json" || !key.endsWith("/zarr.json"))
        continue;
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
