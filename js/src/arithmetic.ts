/**
 * The integer arithmetic of gen templates: integers, names, `+ - * // %`, parentheses and unary
 * minus, with Python's floor semantics. Compiled once into closures; never `eval`/`Function`,
 * so it runs under a strict Content-Security-Policy. Evaluated in BigInt so no intermediate
 * value is rounded.
 */
import { ReferenceFormatError } from "./errors.js";

export type Environment = Readonly<Record<string, number>>;
export type Expression = (env: Environment) => bigint;

type Token =
  | { kind: "int"; value: bigint }
  | { kind: "name"; value: string }
  | { kind: "op"; value: "+" | "-" | "*" | "//" | "%" | "(" | ")" };

const TOKEN = /\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\/\/|[+\-*%()]))/y;

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < source.length) {
    if (/^\s*$/.test(source.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(source);
    if (m === null) {
      throw new ReferenceFormatError(
        `unsupported syntax in template expression ${JSON.stringify(source)} at ${at}`,
      );
    }
    at = TOKEN.lastIndex;
    if (m[1] !== undefined) tokens.push({ kind: "int", value: BigInt(m[1]) });
    else if (m[2] !== undefined) tokens.push({ kind: "name", value: m[2] });
    else tokens.push({ kind: "op", value: m[3] as "+" });
  }
  return tokens;
}

function floorDiv(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new ReferenceFormatError("division by zero in template expression");
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function floorMod(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new ReferenceFormatError("modulo by zero in template expression");
  const r = a % b;
  return r !== 0n && r < 0n !== b < 0n ? r + b : r;
}

/** Compile an expression such as `2048 + chunk_i * 4194304` into a function of its names. */
export function compileExpression(source: string): { evaluate: Expression; names: Set<string> } {
  const tokens = tokenize(source);
  const names = new Set<string>();
  let pos = 0;
  const fail = (what: string): never => {
    throw new ReferenceFormatError(`${what} in template expression ${JSON.stringify(source)}`);
  };
  const isOp = (value: string): boolean => {
    const t = tokens[pos];
    return t !== undefined && t.kind === "op" && t.value === value;
  };

  function primary(): Expression {
    const t = tokens[pos++];
    if (t === undefined) return fail("unexpected end");
    if (t.kind === "int") {
      const v = t.value;
      return () => v;
    }
    if (t.kind === "name") {
      const name = t.value;
      names.add(name);
      return (env) => {
        const v = env[name];
        if (v === undefined) {
          throw new ReferenceFormatError(`unknown name ${name} in ${JSON.stringify(source)}`);
        }
        return BigInt(v);
      };
    }
    if (t.value === "(") {
      const inner = sum();
      if (!isOp(")")) fail("missing )");
      pos++;
      return inner;
    }
    if (t.value === "-") {
      const operand = primary();
      return (env) => -operand(env);
    }
    return fail(`unexpected ${t.value}`);
  }

  function product(): Expression {
    let left = primary();
    for (;;) {
      const t = tokens[pos];
      if (t?.kind !== "op" || (t.value !== "*" && t.value !== "//" && t.value !== "%")) {
        return left;
      }
      pos++;
      const a = left;
      const b = primary();
      if (t.value === "*") left = (env) => a(env) * b(env);
      else if (t.value === "//") left = (env) => floorDiv(a(env), b(env));
      else left = (env) => floorMod(a(env), b(env));
    }
  }

  function sum(): Expression {
    let left = product();
    for (;;) {
      const t = tokens[pos];
      if (t?.kind !== "op" || (t.value !== "+" && t.value !== "-")) return left;
      pos++;
      const a = left;
      const b = product();
      left = t.value === "+" ? (env) => a(env) + b(env) : (env) => a(env) - b(env);
    }
  }

  if (tokens.length === 0) fail("empty expression");
  const evaluate = sum();
  if (pos !== tokens.length) fail("trailing tokens");
  return { evaluate, names };
}

/** Evaluate to a JS number, refusing results that a number cannot hold exactly. */
export function toSafeNumber(value: bigint, what: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new ReferenceFormatError(`${what} ${value} is out of range`);
  return n;
}
