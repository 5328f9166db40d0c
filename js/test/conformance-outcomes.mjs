// What the JS store does with a conformance case, in the form both sides compare; browser-safe
// (no Node APIs), so the same code runs in Node (conformance-run.mjs) and in the Chromium page.
// `openCase(c)` gives {store, requests} for a case's directory: requests collects
// [fileName, start, end] of every fetch.

export function hex(bytes) {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

export function expressionText(c) {
  if ("expression" in c) return c.expression;
  return c.expression_repeat.map(([text, n]) => text.repeat(n)).join("");
}

/** Attribute values in the suite's JSON form: NaN, infinities, bytes and complex numbers as
 * tagged objects (a complex number: `{$complex: [real, imag]}`, each part tagged). */
export function tagged(value) {
  const plain = value === null || Object.getPrototypeOf(value) === Object.prototype;
  if (typeof value === "object" && !plain && "real" in value && "imag" in value) {
    return { $complex: [tagged(value.real), tagged(value.imag)] };
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    return { $float: Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity" };
  }
  if (value instanceof Uint8Array) return { $bytes: hex(value) };
  if (Array.isArray(value)) return value.map(tagged);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tagged(v)]));
  }
  return value;
}

const errorName = (error) => error?.name ?? String(error);

export function expressionOutcome(compileExpression, c, variables) {
  let compiled;
  try {
    compiled = compileExpression(expressionText(c));
  } catch (error) {
    return { error: errorName(error), stage: "compile" };
  }
  try {
    return { value: Number(compiled.evaluate(c.variables ?? variables)) };
  } catch (error) {
    return { error: errorName(error), stage: "evaluate" };
  }
}

function readOne(store, read) {
  const key = `/${read.key}`;
  const range = read.range;
  if (range === undefined) return store.get(key);
  if ("suffix" in range) return store.getRange(key, { suffixLength: range.suffix });
  return store.getRange(key, { offset: range.offset, length: range.length });
}

/** Per read: {bytes: hex} | {missing: true} | {error}, and whether it fetched only `within`. */
export async function documentOutcomes(openCase, c) {
  const { store, requests } = await openCase(c);
  const out = [];
  for (const read of c.reads) {
    requests.length = 0;
    let got;
    try {
      const bytes = await readOne(store, read);
      got = bytes === undefined ? { missing: true } : { bytes: hex(bytes) };
    } catch (error) {
      got = { error: errorName(error) };
    }
    if (read.within !== undefined) {
      const [name, start, end] = read.within;
      got.within = !requests.some(([n, a, b]) => n === name && (a < start || b > end));
    }
    out.push(got);
  }
  return out;
}

export async function malformedOutcome(openCase, c) {
  try {
    const { store } = await openCase(c);
    if (c.read !== undefined) await store.get(`/${c.read}`);
  } catch (error) {
    return { error: errorName(error) };
  }
  return { error: null };
}

export async function attributeOutcome(openCase, zarr, decodeAttributes, c) {
  try {
    const { store } = await openCase(c);
    const node = await zarr.open.v3(zarr.root(store).resolve(c.node));
    return tagged(decodeAttributes(node.attrs));
  } catch (error) {
    return { error: errorName(error) };
  }
}

/**
 * An array read as h5py reads it, in the suite's JSON form (`conformance.native_form` in
 * Python): records through `decodeStruct`, sequences through `decodeSequences`.
 */
export async function typesOutcome(openCase, zarr, shadowzarr, c) {
  try {
    const { store } = await openCase(c);
    const array = await zarr.open.v3(zarr.root(store).resolve(c.node), { kind: "array" });
    const layout = store.structOf(c.node);
    if (layout !== undefined) {
      return recordsForm(shadowzarr.decodeStruct(await zarr.get(array, null), layout), layout);
    }
    const type = store.sequencesOf(c.node);
    if (type === undefined) return { error: "not records or sequences" };
    const { shape, sequences } = shadowzarr.decodeSequences(await zarr.get(array, null), type);
    const names = new Set(sequences.map((s) => s.constructor.name));
    const plain = (values) => Array.from(values, Number);
    return {
      shape,
      dtype: names.size === 1 ? type.dataType : "mixed",
      sequences: sequences.map(plain),
    };
  } catch (error) {
    return { error: errorName(error) };
  }
}

function recordsForm(decoded, layout) {
  const fields = {};
  for (const field of layout.fields) {
    const values = decoded.fields[field.name];
    if (field.layout !== undefined) {
      fields[field.name] = recordsForm(values, field.layout);
    } else if (field.dataType?.name === "fixed_length_utf32") {
      fields[field.name] = Array.from(values); // decodeStruct gives each value's text
    } else if (typeof field.dataType !== "string") {
      const size = field.size / (field.shape ?? []).reduce((a, b) => a * b, 1);
      const out = [];
      for (let i = 0; i < values.length; i += size)
        out.push({ $bytes: hex(values.subarray(i, i + size)) });
      fields[field.name] = out;
    } else {
      fields[field.name] = Array.from(values, Number);
    }
  }
  return { shape: decoded.shape, fields };
}

/** A fetch that logs [path relative to `base`, start, end) of each request, then fetches. */
export function loggingFetch(base, requests, inner) {
  return (request) => {
    const name = request.url.startsWith(base) ? request.url.slice(base.length) : request.url;
    const m = /^bytes=(\d+)-(\d+)$/.exec(request.headers.get("range") ?? "");
    requests.push(m ? [name, Number(m[1]), Number(m[2]) + 1] : [name, 0, Infinity]);
    return inner(request);
  };
}
