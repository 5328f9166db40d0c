/**
 * The Non-Finite Attributes and Bytes Attributes Zarr conventions: NaN/±Infinity stored as the
 * strings "NaN"/"Infinity"/"-Infinity", bytes as "base64:…", and a real string of either form
 * (or one starting with `_str_`) escaped with the prefix `_str_`. A node registers the
 * conventions it uses in its `zarr_conventions` attribute (an object with the convention's
 * uuid); only registered ones are decoded. The rules are Python's `decode_attributes`, checked
 * by the conformance cases of `shadowzarr_spec/conformance/attributes.json`.
 *
 * The Complex Attributes convention stores a complex number as "complex:<real>,<imag>" (each
 * part a JSON number or a non-finite word); it decodes to a `Complex`, as Python's
 * `decode_attributes` gives a `complex`.
 *
 * The Attribute Types convention records numbers' numpy types and shapes under
 * `_ATTRIBUTE_TYPES` (`{name: {dtype: "<f4", shape: [1]}}`). JavaScript numbers have no width,
 * so only the shape is applied here: a number recorded with shape `[1]` becomes `[number]`, as
 * h5py (and Python's `decode_attributes`) give it; the record itself leaves the attributes. A
 * number recorded with a complex type (`"<c8"`) becomes a `Complex` with imaginary part 0.
 */
import { base64Decode } from "./bytes.js";
import { ReferenceFormatError } from "./errors.js";

export const NON_FINITE_CONVENTION = {
  uuid: "4b1b3f0e-6a5e-5d8a-9c57-8c1a6a0e2f11",
  name: "non-finite-attributes",
} as const;

export const BYTES_CONVENTION = {
  uuid: "9d2c6a57-0b8e-5f3c-a1e4-3e7b5c2d9f40",
  name: "bytes-attributes",
} as const;

export const COMPLEX_CONVENTION = {
  uuid: "5f0c8e21-7d3a-5b6e-b2c4-1a9d7e3f6c58",
  name: "complex-attributes",
} as const;

export const ATTRIBUTE_TYPES_CONVENTION = {
  uuid: "c3a7e1d2-4f6b-5a8c-9e0d-2b7f4c1a6e93",
  name: "attribute-types",
} as const;

export const ATTRIBUTE_TYPES_KEY = "_ATTRIBUTE_TYPES";
export const CONVENTIONS_KEY = "zarr_conventions";
/** The largest element count a recorded shape may have (as in the Python reader). */
const MAX_TYPED_ELEMENTS = 2 ** 24;
const NUMBER_TYPE = /^[<>|]?[biufc][0-9]{1,2}$/;
export const STR_PREFIX = "_str_";
const BASE64_PREFIX = "base64:";
const COMPLEX_PREFIX = "complex:";
/** One part of a complex attribute: a JSON number (the non-finite words are looked up apart). */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
export const NON_FINITE_WORDS: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};

/** A complex attribute value (JavaScript has no complex numbers). */
export class Complex {
  constructor(
    readonly real: number,
    readonly imag: number,
  ) {}
}

export type DecodedAttribute =
  | null
  | boolean
  | number
  | string
  | Uint8Array
  | Complex
  | DecodedAttribute[]
  | { [key: string]: DecodedAttribute };

function isConvention(entry: unknown, convention: { uuid: string }): boolean {
  return (
    entry !== null &&
    typeof entry === "object" &&
    (entry as { uuid?: unknown }).uuid === convention.uuid
  );
}

/** Whether a `zarr_conventions` value registers `convention` (an entry with its uuid). */
export function registers(conventions: unknown, convention: { uuid: string }): boolean {
  return Array.isArray(conventions) && conventions.some((e) => isConvention(e, convention));
}

/**
 * Decode the attributes of a group or array (`array.attrs`) following the conventions its
 * `zarr_conventions` attribute registers: numbers for the non-finite strings, `Uint8Array` for
 * "base64:…" strings, `Complex` for "complex:…" strings, `_str_` stripped exactly once. The
 * decoded conventions leave `zarr_conventions` (which is dropped when nothing else remains);
 * other attributes are returned unchanged. A "base64:" value that is not base64, or a
 * "complex:" value that is not two numbers, is a ReferenceFormatError.
 */
export function decodeAttributes(
  attributes: Record<string, unknown>,
): Record<string, DecodedAttribute> {
  const conventions = attributes[CONVENTIONS_KEY];
  const nonFinite = registers(conventions, NON_FINITE_CONVENTION);
  const bytes = registers(conventions, BYTES_CONVENTION);
  const complex = registers(conventions, COMPLEX_CONVENTION);
  const typed = registers(conventions, ATTRIBUTE_TYPES_CONVENTION);
  if (!nonFinite && !bytes && !complex && !typed) {
    return { ...attributes } as Record<string, DecodedAttribute>;
  }
  const decodeValue = (value: unknown): DecodedAttribute => {
    if (typeof value === "string") {
      if (value.startsWith(STR_PREFIX)) return value.slice(STR_PREFIX.length);
      if (nonFinite && Object.prototype.hasOwnProperty.call(NON_FINITE_WORDS, value)) {
        return NON_FINITE_WORDS[value] as number;
      }
      if (bytes && value.startsWith(BASE64_PREFIX)) {
        return base64Decode(value.slice(BASE64_PREFIX.length));
      }
      if (complex && value.startsWith(COMPLEX_PREFIX)) return complexOf(value);
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
    if (key !== CONVENTIONS_KEY) out[key] = decodeValue(value);
  }
  if (typed && Object.prototype.hasOwnProperty.call(out, ATTRIBUTE_TYPES_KEY)) {
    const recorded = out[ATTRIBUTE_TYPES_KEY];
    delete out[ATTRIBUTE_TYPES_KEY];
    applyShapes(out, recorded);
  }
  const remaining = (conventions as unknown[]).filter(
    (e) =>
      !isConvention(e, NON_FINITE_CONVENTION) &&
      !isConvention(e, BYTES_CONVENTION) &&
      !isConvention(e, COMPLEX_CONVENTION) &&
      !isConvention(e, ATTRIBUTE_TYPES_CONVENTION),
  );
  if (remaining.length > 0) out[CONVENTIONS_KEY] = remaining as DecodedAttribute;
  return out;
}

/** Give each recorded attribute its recorded shape (nested arrays; shape `[]`: one number). */
function applyShapes(out: Record<string, DecodedAttribute>, recorded: DecodedAttribute): void {
  if (recorded === null || typeof recorded !== "object" || Array.isArray(recorded)) {
    throw new ReferenceFormatError(`${ATTRIBUTE_TYPES_KEY} is not an object`);
  }
  if (recorded instanceof Uint8Array) {
    throw new ReferenceFormatError(`${ATTRIBUTE_TYPES_KEY} is not an object`);
  }
  for (const [name, record] of Object.entries(recorded)) {
    if (!Object.prototype.hasOwnProperty.call(out, name)) continue;
    const shape = checkedShape(name, record);
    const flat: DecodedAttribute[] = [];
    flatten(out[name] as DecodedAttribute, flat);
    const complex = ((record as { dtype: string }).dtype.match(/[biufc]/) ?? [""])[0] === "c";
    const real = (v: DecodedAttribute) => typeof v === "number" || typeof v === "boolean";
    if (!flat.every((v) => real(v) || (complex && v instanceof Complex))) {
      throw new ReferenceFormatError(`attribute ${JSON.stringify(name)} does not hold numbers`);
    }
    const count = shape.reduce((a, b) => a * b, 1);
    if (flat.length !== count) {
      throw new ReferenceFormatError(
        `attribute ${JSON.stringify(name)} holds ${flat.length} numbers, its recorded shape ` +
          `[${shape.join(", ")}] ${count}`,
      );
    }
    out[name] = nest(
      complex ? flat.map((v) => (v instanceof Complex ? v : new Complex(Number(v), 0))) : flat,
      shape,
    );
  }
}

/** The `Complex` of a "complex:<real>,<imag>" attribute value. */
function complexOf(text: string): Complex {
  const parts = text.slice(COMPLEX_PREFIX.length).split(",");
  const numbers = parts.map((part) =>
    Object.prototype.hasOwnProperty.call(NON_FINITE_WORDS, part)
      ? (NON_FINITE_WORDS[part] as number)
      : JSON_NUMBER.test(part)
        ? Number(part)
        : undefined,
  );
  if (numbers.length !== 2 || numbers.some((n) => n === undefined)) {
    throw new ReferenceFormatError(
      `attribute value ${JSON.stringify(text.slice(0, 40))} is not a complex number`,
    );
  }
  return new Complex(numbers[0] as number, numbers[1] as number);
}

function checkedShape(name: string, record: DecodedAttribute): number[] {
  const where = `${ATTRIBUTE_TYPES_KEY}[${JSON.stringify(name)}]`;
  if (record === null || typeof record !== "object" || Array.isArray(record)) {
    throw new ReferenceFormatError(`${where} is not an object`);
  }
  const { dtype, shape } = record as { dtype?: unknown; shape?: unknown };
  if (typeof dtype !== "string" || !NUMBER_TYPE.test(dtype) || !Array.isArray(shape)) {
    throw new ReferenceFormatError(`${where} needs a number's dtype and a shape`);
  }
  if (!shape.every((n) => Number.isSafeInteger(n) && (n as number) >= 0) || shape.length > 32) {
    throw new ReferenceFormatError(`${where}: bad shape`);
  }
  const dims = shape as number[];
  if (dims.reduce((a, b) => a * b, 1) > MAX_TYPED_ELEMENTS) {
    throw new ReferenceFormatError(`${where}: shape too large`);
  }
  return dims;
}

function flatten(value: DecodedAttribute, into: DecodedAttribute[]): void {
  if (Array.isArray(value)) {
    for (const item of value) flatten(item, into);
  } else {
    into.push(value);
  }
}

function nest(flat: DecodedAttribute[], shape: number[]): DecodedAttribute {
  if (shape.length === 0) return flat[0] as DecodedAttribute;
  const [first, ...rest] = shape as [number, ...number[]];
  const step = rest.reduce((a, b) => a * b, 1);
  const out: DecodedAttribute[] = [];
  for (let i = 0; i < first; i += 1) out.push(nest(flat.slice(i * step, (i + 1) * step), rest));
  return out;
}
