// Reading every fixture array through zarrita + the store and comparing it with what h5py/numpy
// read. Shared by the Node tests and the browser page (no Node APIs here).

const CONSTRUCTORS = {
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  float32: Float32Array,
  float64: Float64Array,
  bool: Uint8Array,
};

export async function fetchBytes(url, fetchImpl = fetch) {
  const response = await fetchImpl(new Request(url));
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

export async function loadExpected(base, entry, fetchImpl) {
  const bytes = await fetchBytes(`${base}/expected/${entry.data}`, fetchImpl);
  const Ctor = CONSTRUCTORS[entry.dtype];
  if (!Ctor) throw new Error(`no constructor for ${entry.dtype}`);
  return new Ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / Ctor.BYTES_PER_ELEMENT);
}

function same(a, b) {
  if (typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b))
    return true;
  return a === b || (typeof a === "boolean" && Number(a) === b);
}

/**
 * Compare a zarrita result {data, shape, stride} with C-ordered `expected` over `shape`, where
 * the result covers `offsetIndex` (start indices) of the expected array of `fullShape`.
 * Returns a description of the first mismatch or null.
 */
export function compareResult(result, expected, fullShape, starts = fullShape.map(() => 0)) {
  const shape = result.shape;
  const n = shape.reduce((a, b) => a * b, 1);
  const idx = shape.map(() => 0);
  const fullStrides = [];
  let s = 1;
  for (let i = fullShape.length - 1; i >= 0; i--) {
    fullStrides[i] = s;
    s *= fullShape[i];
  }
  for (let k = 0; k < n; k++) {
    let at = 0;
    let exp = 0;
    for (let d = 0; d < shape.length; d++) {
      at += idx[d] * result.stride[d];
      exp += (idx[d] + starts[d]) * fullStrides[d];
    }
    const got = result.data.get ? result.data.get(at) : result.data[at];
    if (!same(got, expected[exp])) {
      return `at [${idx.map((v, d) => v + starts[d])}]: got ${got}, expected ${expected[exp]}`;
    }
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return null;
}

/** Open and read every array of a manifest section; returns [{path, error}] for mismatches. */
export async function readAndCompareAll({ zarr, store, base, section, fetchImpl }) {
  const failures = [];
  let checked = 0;
  for (const entry of section.arrays) {
    try {
      const array = await zarr.open.v3(zarr.root(store).resolve(entry.path), { kind: "array" });
      const expected = await loadExpected(base, entry, fetchImpl);
      const result = await zarr.get(array, null);
      const full =
        entry.shape.length === 0
          ? { data: result.data ?? [result], shape: [], stride: [] }
          : result;
      const got = entry.shape.length === 0 ? { data: [result], shape: [1], stride: [1] } : full;
      const mismatch = compareResult(got, expected, entry.shape.length ? entry.shape : [1]);
      if (mismatch) failures.push({ path: entry.path, error: mismatch });
      checked++;
    } catch (error) {
      failures.push({
        path: entry.path,
        error: `${error?.name}: ${error?.message} ${error?.cause ?? ""}`,
      });
    }
  }
  return { failures, checked };
}

/**
 * Open every struct array of a manifest section (`structs`: path, shape, fields as h5py read
 * them, strings decoded) and compare what `decodeStruct` makes of `zarr.get`, field by field;
 * returns [{path, error}] for mismatches.
 */
export async function readAndCompareStructs({ zarr, store, section, decodeStruct }) {
  const failures = [];
  for (const entry of section.structs) {
    try {
      const array = await zarr.open.v3(zarr.root(store).resolve(entry.path), { kind: "array" });
      const layout = store.structOf(entry.path);
      const { shape, fields } = decodeStruct(await zarr.get(array, null), layout);
      const got = { shape, fields: {} };
      for (const [name, values] of Object.entries(fields)) got.fields[name] = [...values];
      const wanted = { shape: entry.shape, fields: entry.fields };
      if (JSON.stringify(got) !== JSON.stringify(wanted)) {
        failures.push({ path: entry.path, error: `got ${JSON.stringify(got)}` });
      }
    } catch (error) {
      failures.push({ path: entry.path, error: `${error?.name}: ${error?.message}` });
    }
  }
  return failures;
}
