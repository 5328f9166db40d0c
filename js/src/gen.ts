/**
 * kerchunk gen entries, compiled into a key matcher: a key is tested against the entry's key
 * pattern, the dimension values are read from it and checked against the dimensions, and only
 * then are url/offset/length evaluated. Nothing is expanded up front.
 */
import { toSafeNumber } from "./arithmetic.js";
import { ReferenceFormatError } from "./errors.js";
import { compileTemplate, type CompiledTemplate } from "./template.js";

export interface GenEntryJson {
  key: string;
  url: string;
  offset?: string | number;
  length?: string | number;
  dimensions: Record<string, { start?: number; stop: number; step?: number } | number[]>;
}

export interface ResolvedRange {
  url: string;
  /** Absent for a whole-file reference. */
  offset?: number;
  size?: number;
}

type Dimension = (value: number) => boolean;

function compileDimension(name: string, spec: GenEntryJson["dimensions"][string]): Dimension {
  if (Array.isArray(spec)) {
    const values = new Set(spec);
    return (v) => values.has(v);
  }
  if (spec === null || typeof spec !== "object" || typeof spec.stop !== "number") {
    throw new ReferenceFormatError(`gen dimension ${name} needs a list or {start, stop, step}`);
  }
  const start = spec.start ?? 0;
  const stop = spec.stop;
  const step = spec.step ?? 1;
  if (!Number.isInteger(step) || step === 0) {
    throw new ReferenceFormatError(`gen dimension ${name} has step ${step}`);
  }
  return step > 0
    ? (v) => v >= start && v < stop && (v - start) % step === 0
    : (v) => v <= start && v > stop && (start - v) % -step === 0;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export class GenEntry {
  readonly #pattern: RegExp;
  readonly #names: string[];
  readonly #dimensions: Map<string, Dimension>;
  readonly #url: CompiledTemplate;
  readonly #offset: CompiledTemplate | undefined;
  readonly #length: CompiledTemplate | undefined;

  constructor(entry: GenEntryJson) {
    if (typeof entry?.key !== "string" || typeof entry.url !== "string") {
      throw new ReferenceFormatError("a gen entry needs string key and url");
    }
    this.#dimensions = new Map(
      Object.entries(entry.dimensions ?? {}).map(([n, s]) => [n, compileDimension(n, s)]),
    );
    this.#names = [];
    let source = "^";
    let last = 0;
    for (const m of entry.key.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)) {
      const name = m[1] as string;
      if (!this.#dimensions.has(name)) {
        throw new ReferenceFormatError(`gen key ${entry.key} uses ${name}, not a dimension`);
      }
      source += escapeRegExp(entry.key.slice(last, m.index)) + "(-?\\d+)";
      this.#names.push(name);
      last = (m.index ?? 0) + m[0].length;
    }
    const rest = entry.key.slice(last);
    if (rest.includes("{{")) {
      throw new ReferenceFormatError(`gen key ${entry.key}: only bare dimension names allowed`);
    }
    this.#pattern = new RegExp(source + escapeRegExp(rest) + "$");
    this.#url = compileTemplate(entry.url);
    const asTemplate = (v: string | number | undefined) =>
      v === undefined ? undefined : compileTemplate(String(v));
    this.#offset = asTemplate(entry.offset);
    this.#length = asTemplate(entry.length);
    if ((this.#offset === undefined) !== (this.#length === undefined)) {
      throw new ReferenceFormatError(`gen entry ${entry.key} needs both offset and length`);
    }
  }

  /** The reference for `key` if this entry generates it, else undefined. */
  resolve(key: string, templates: Readonly<Record<string, string>>): ResolvedRange | undefined {
    const m = this.#pattern.exec(key);
    if (m === null) return undefined;
    const env: Record<string, number> = {};
    for (let i = 0; i < this.#names.length; i++) {
      const name = this.#names[i] as string;
      const text = m[i + 1] as string;
      const value = Number(text);
      // kerchunk renders plain integers: "05" or "-0" are other keys.
      if (String(value) !== text) return undefined;
      if (env[name] !== undefined && env[name] !== value) return undefined;
      if (!(this.#dimensions.get(name) as Dimension)(value)) return undefined;
      env[name] = value;
    }
    const url = this.#url.render(env, templates);
    if (this.#offset === undefined || this.#length === undefined) return { url };
    return {
      url,
      offset: toSafeNumber(this.#offset.integer(env), "gen offset"),
      size: toSafeNumber(this.#length.integer(env), "gen length"),
    };
  }
}
