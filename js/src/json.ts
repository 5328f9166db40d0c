/**
 * JSON as Python writes it: bare `NaN`, `Infinity` and `-Infinity` tokens, and 64-bit integers
 * that `JSON.parse` would round. Both are rewritten before zarrita or `JSON.parse` sees them.
 */

const QUOTE = 34; // "
const BACKSLASH = 92; // \
const MINUS = 45; // -
const N = 78; // N
const I = 73; // I

/** The bare token starting at `i` (outside strings), or undefined. */
function nonFiniteTokenAt(s: string, i: number): string | undefined {
  const c = s.charCodeAt(i);
  if (c === N && s.startsWith("NaN", i)) return "NaN";
  if (c === I && s.startsWith("Infinity", i)) return "Infinity";
  if (c === MINUS && s.charCodeAt(i + 1) === I && s.startsWith("-Infinity", i)) return "-Infinity";
  return undefined;
}

/**
 * Replace bare `NaN`/`Infinity`/`-Infinity` tokens outside strings by the Zarr v3 string forms
 * `"NaN"`, `"Infinity"`, `"-Infinity"`. Returns `text` itself when nothing changes.
 */
export function quoteNonFinite(text: string): string {
  return quoteNonFiniteWith(text, "");
}

function quoteNonFiniteWith(text: string, prefix: string): string {
  let out: string[] | null = null;
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      continue;
    }
    const token = nonFiniteTokenAt(text, i);
    if (token !== undefined) {
      (out ??= []).push(text.slice(last, i), JSON.stringify(prefix + token));
      i += token.length - 1;
      last = i + 1;
    }
  }
  return out === null ? text : out.join("") + text.slice(last);
}

const LARGE_FILL = /("fill_value"\s*:\s*)(-?\d{16,})(?=\s*[,}\]])/g;

/**
 * Quote integer `fill_value`s beyond 2^53 (`JSON.parse` would round 2^64-1 to 2^64, which
 * zarrita wraps to 0n); zarrita turns the string into the exact BigInt.
 */
export function quoteLargeFillValues(text: string): string {
  if (!text.includes("fill_value")) return text;
  return text.replace(LARGE_FILL, (whole, prefix: string, digits: string) =>
    Number.isSafeInteger(Number(digits)) ? whole : `${prefix}"${digits}"`,
  );
}

/** Metadata text as zarrita can parse it: non-finite tokens and large fill values quoted. */
export function normalizeMetadataText(text: string): string {
  return quoteLargeFillValues(quoteNonFinite(text));
}

const SENTINEL = "\u0000shadowzarr-non-finite:";

/**
 * `JSON.parse` that also accepts the bare tokens `NaN`, `Infinity` and `-Infinity` (legacy
 * reference files written by Python's `json`) and reads them as numbers.
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    const quoted = quoteNonFiniteWith(text, SENTINEL);
    if (quoted === text) throw error;
    return JSON.parse(quoted, (_key, value: unknown) => {
      if (typeof value === "string" && value.startsWith(SENTINEL)) {
        return Number(value.slice(SENTINEL.length));
      }
      return value;
    });
  }
}
