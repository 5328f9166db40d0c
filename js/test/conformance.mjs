// The format's conformance suite (packages/shadowzarr-spec/src/shadowzarr_spec/conformance), as
// the Python side reads it: the same file contents, the same expansion of metadata shorthands,
// the same expected bytes. Python's harness is shadowzarr_spec/conformance/__init__.py; the two
// must stay identical (the format of the cases is in that folder's README.md).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export { expressionText, tagged } from "./conformance-outcomes.mjs";

export const CONFORMANCE_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../packages/shadowzarr-spec/src/shadowzarr_spec/conformance",
);

export const SUITES = ["gen_expressions", "documents", "malformed", "attributes", "types"];

export function load(name) {
  return JSON.parse(readFileSync(join(CONFORMANCE_DIR, `${name}.json`), "utf8"));
}

const JS_ERRORS = load("errors").js;

/** The name of the error class the store must raise where Python raises `pythonName`. */
export function jsErrorName(pythonName) {
  const name = JS_ERRORS[pythonName];
  if (name === undefined) throw new Error(`errors.json maps no JS error for ${pythonName}`);
  return name;
}

export function caseCount() {
  let total = 0;
  for (const suite of SUITES) {
    for (const c of load(suite).cases) total += c.reads ? c.reads.length : 1;
  }
  return total;
}

export function pattern(size) {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + (i >> 8) * 17 + (i >> 16) * 13 + 7) & 0xff;
  return out;
}

function fromHex(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function fileBytes(spec) {
  if ("pattern" in spec) return pattern(spec.pattern);
  if ("hex" in spec) return fromHex(spec.hex);
  if ("base64" in spec) return new Uint8Array(Buffer.from(spec.base64, "base64"));
  if ("text" in spec) return new TextEncoder().encode(spec.text);
  if ("json" in spec) return new TextEncoder().encode(JSON.stringify(spec.json));
  throw new Error(`unknown file spec ${Object.keys(spec)}`);
}

function arrayMetadata(spec) {
  return {
    zarr_format: 3,
    node_type: "array",
    shape: spec.shape,
    data_type: spec.data_type ?? "int32",
    chunk_grid: { name: "regular", configuration: { chunk_shape: spec.chunks ?? spec.shape } },
    chunk_key_encoding: spec.chunk_key_encoding ?? {
      name: "default",
      configuration: { separator: "/" },
    },
    fill_value: spec.fill_value ?? 0,
    codecs: spec.codecs ?? [{ name: "bytes", configuration: { endian: "little" } }],
    attributes: spec.attributes ?? {},
  };
}

function expandValue(value) {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1) {
      const body = value[keys[0]];
      if (keys[0] === "$array") return JSON.stringify(arrayMetadata(body));
      if (keys[0] === "$group") {
        return JSON.stringify({
          zarr_format: 3,
          node_type: "group",
          ...body,
          attributes: body.attributes ?? {},
        });
      }
      if (keys[0] === "$json") return JSON.stringify(body);
    }
  }
  return value;
}

/** The contents of every file of a case, by name. */
export function caseFiles(c) {
  return Object.fromEntries(Object.entries(c.files ?? {}).map(([n, spec]) => [n, fileBytes(spec)]));
}

const mapValues = (object, fn) =>
  Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fn(v)]));

export function documentText(c) {
  if ("document_text" in c) return c.document_text;
  if ("document_text_repeat" in c) {
    return c.document_text_repeat.map(([text, n]) => text.repeat(n)).join("");
  }
  let document = c.document;
  if (document === null || typeof document !== "object" || Array.isArray(document)) {
    return JSON.stringify(document);
  }
  if ("refs" in document || "version" in document) {
    const refs = document.refs;
    if (refs !== null && typeof refs === "object" && !Array.isArray(refs)) {
      document = { ...document, refs: mapValues(refs, expandValue) };
    }
  } else {
    document = mapValues(document, expandValue);
  }
  return JSON.stringify(document);
}

/** Write a case's files and refs.json into `directory`; returns {name: bytes}. */
export function writeCaseDirectory(c, directory) {
  const contents = {};
  for (const [name, spec] of Object.entries(c.files ?? {})) {
    const data = fileBytes(spec);
    const path = join(directory, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, data);
    contents[name] = data;
  }
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, "refs.json"), documentText(c));
  return contents;
}

export function expectedBytes(pieces, files) {
  const parts = pieces.map((piece) =>
    Array.isArray(piece)
      ? files[piece[0]].subarray(piece[1], piece[1] + piece[2])
      : fromHex(piece.hex),
  );
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
