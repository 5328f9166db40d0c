/**
 * The Non-Finite Attributes and Bytes Attributes Zarr conventions: NaN/±Infinity stored as the
 * strings "NaN"/"Infinity"/"-Infinity", bytes as "base64:…", and a real string of either form
 * (or one starting with `_str_`) escaped with the prefix `_str_`. A node registers the
 * conventions it uses in its `zarr_conventions` attribute; only registered ones are decoded.
 */
import { base64Decode } from "./bytes.js";

export const NON_FINITE_CONVENTION = {
  uuid: "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11",
  name: "non-finite-attributes",
} as const;

export const BYTES_CONVENTION = {
  uuid: "9d2c6a57-0b8e-5f3c-a1e4-3e7b5c2d9f40",
  name: "bytes-attributes",
} as const;

const STR_PREFIX = "_str_";
const BASE64_PREFIX = "base64:";
const NON_FINITE: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};

export type DecodedAttribute =
  | null
  | boolean
  | number
  | string
  | Uint8Array
  | DecodedAttribute[]
  | { [key: string]: DecodedAttribute };

function registers(conventions: unknown, convention: { uuid: string; name: string }): boolean {
  if (!Array.isArray(conventions)) return false;
  return conventions.some((entry) => {
    if (typeof entry === "string") return entry === convention.uuid || entry === convention.name;
    if (entry !== null && typeof entry === "object") {
      const e = entry as { uuid?: unknown; name?: unknown };
      return e.uuid === convention.uuid || (e.uuid === undefined && e.name === convention.name);
    }
    return false;
  });
}

/**
 * Decode the attributes of a group or array (`array.attrs`) following the conventions its
 * `zarr_conventions` attribute registers: numbers for the non-finite strings, `Uint8Array` for
 * "base64:…" strings, `_str_` stripped exactly once. Other attributes are returned unchanged.
 */
export function decodeAttributes(
  attributes: Record<string, unknown>,
): Record<string, DecodedAttribute> {
  const conventions = attributes.zarr_conventions;
  const nonFinite = registers(conventions, NON_FINITE_CONVENTION);
  const bytes = registers(conventions, BYTES_CONVENTION);
  const decodeValue = (value: unknown): DecodedAttribute => {
    if (typeof value === "string") {
      if (!nonFinite && !bytes) return value;
      if (value.startsWith(STR_PREFIX)) return value.slice(STR_PREFIX.length);
      if (nonFinite && value in NON_FINITE) return NON_FINITE[value] as number;
      if (bytes && value.startsWith(BASE64_PREFIX)) {
        return base64Decode(value.slice(BASE64_PREFIX.length));
      }
      return value;
    }
    if (Array.isArray(value)) return value.map(decodeValue);
    if (value !== null && typeof value === "object") {
      const out: Record<string, DecodedAttribute> = {};
      for (const [k, v] of Object.entries(value)) out[k] = decodeValue(v);
      return out;
    }
    return value as DecodedAttribute;
  };
  const out: Record<string, DecodedAttribute> = {};
  for (const [key, value] of Object.entries(attributes)) {
    out[key] = key === "zarr_conventions" ? (value as DecodedAttribute) : decodeValue(value);
  }
  return out;
}
