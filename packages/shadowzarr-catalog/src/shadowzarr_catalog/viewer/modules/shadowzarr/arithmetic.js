/**
 * The integer arithmetic of gen templates, as the README of shadowzarr-spec defines it
 * ("Templates and gen expressions"): ASCII integers and names, `+ - * // %`, parentheses and
 * unary `+`/`-`, with Python's floor semantics, at most 1000 characters, 50 levels of nesting and
 * values of magnitude 2^53 - 1. The Python reader implements the same definition and both run
 * the conformance cases of `shadowzarr_spec/conformance/gen_expressions.json`.
 *
 * Compiled once into a postfix program and evaluated without recursion; never `eval`/`Function`,
 * so it runs under a strict Content-Security-Policy. Evaluated in BigInt so that a value beyond
 * the limit is seen exactly rather than rounded.
 */
import { GenExpressionError } from "./errors.js";
/** Characters between `{{` and `}}`. */
export const MAX_EXPRESSION_LENGTH = 1000;
/** Parentheses and unary operators open at once. */
export const MAX_DEPTH = 50;
/** Largest magnitude of a literal, a name's value and every intermediate result. */
export const MAX_MAGNITUDE = BigInt(Number.MAX_SAFE_INTEGER);
const isWhitespace = (c) => c === 32 || c === 9 || c === 10 || c === 13;
const isDigit = (c) => c >= 48 && c <= 57;
const isNameStart = (c) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameChar = (c) => isNameStart(c) || isDigit(c);
/** ASCII space, tab, line feed and carriage return, the only whitespace of the language. */
export function stripWhitespace(text) {
    let start = 0;
    let end = text.length;
    while (start < end && isWhitespace(text.charCodeAt(start)))
        start++;
    while (end > start && isWhitespace(text.charCodeAt(end - 1)))
        end--;
    return text.slice(start, end);
}
/** Whether `text` is a name of the language (ASCII letters, digits and `_`). */
export function isName(text) {
    if (text.length === 0 || !isNameStart(text.charCodeAt(0)))
        return false;
    for (let i = 1; i < text.length; i++)
        if (!isNameChar(text.charCodeAt(i)))
            return false;
    return true;
}
function shown(source) {
    return JSON.stringify(source.slice(0, 80));
}
function tokenize(source) {
    const tokens = [];
    let at = 0;
    while (at < source.length) {
        const c = source.charCodeAt(at);
        if (isWhitespace(c)) {
            at++;
            continue;
        }
        const start = at;
        if (isDigit(c)) {
            while (at < source.length && isDigit(source.charCodeAt(at)))
                at++;
            tokens.push({ kind: "int", text: source.slice(start, at) });
        }
        else if (isNameStart(c)) {
            while (at < source.length && isNameChar(source.charCodeAt(at)))
                at++;
            tokens.push({ kind: "name", text: source.slice(start, at) });
        }
        else if (source.startsWith("//", at)) {
            at += 2;
            tokens.push({ kind: "op", text: "//" });
        }
        else if ("+-*%()".includes(source[at])) {
            tokens.push({ kind: "op", text: source[at] });
            at++;
        }
        else {
            throw new GenExpressionError(`gen expression ${shown(source)} holds ${JSON.stringify(source.slice(at, at + 20))}, ` +
                "which is not integer arithmetic (only integers, names, + - * // % and parentheses)");
        }
    }
    if (tokens.length === 0)
        throw new GenExpressionError("empty gen expression");
    return tokens;
}
/** Recursive descent; `depth` counts the parentheses and unary operators open. */
function parse(source, tokens) {
    const program = [];
    const names = new Set();
    let pos = 0;
    const peekOp = (...ops) => {
        const t = tokens[pos];
        return t !== undefined && t.kind === "op" && ops.includes(t.text) ? t.text : undefined;
    };
    const deeper = (depth) => {
        if (depth + 1 > MAX_DEPTH) {
            throw new GenExpressionError(`gen expression ${shown(source)} nests more than ${MAX_DEPTH} levels`);
        }
        return depth + 1;
    };
    function sum(depth) {
        product(depth);
        for (let op = peekOp("+", "-"); op !== undefined; op = peekOp("+", "-")) {
            pos++;
            product(depth);
            program.push({ op: op });
        }
    }
    function product(depth) {
        unary(depth);
        for (let op = peekOp("*", "//", "%"); op !== undefined; op = peekOp("*", "//", "%")) {
            pos++;
            unary(depth);
            program.push({ op: op });
        }
    }
    function unary(depth) {
        const op = peekOp("+", "-");
        if (op === undefined)
            return primary(depth);
        pos++;
        unary(deeper(depth));
        if (op === "-")
            program.push({ op: "neg" });
    }
    function primary(depth) {
        const t = tokens[pos++];
        if (t === undefined)
            throw new GenExpressionError(`gen expression ${shown(source)} ends too early`);
        if (t.kind === "int") {
            const value = BigInt(t.text);
            if (value > MAX_MAGNITUDE) {
                throw new GenExpressionError(`integer ${JSON.stringify(t.text.slice(0, 30))} in gen expression is larger than ` +
                    String(MAX_MAGNITUDE));
            }
            program.push({ op: "int", value });
            return;
        }
        if (t.kind === "name") {
            names.add(t.text);
            program.push({ op: "name", name: t.text });
            return;
        }
        if (t.text === "(") {
            sum(deeper(depth));
            if (peekOp(")") === undefined) {
                throw new GenExpressionError(`missing ')' in gen expression ${shown(source)}`);
            }
            pos++;
            return;
        }
        throw new GenExpressionError(`unexpected ${t.text} in gen expression ${shown(source)}`);
    }
    sum(0);
    if (pos !== tokens.length) {
        const t = tokens[pos];
        throw new GenExpressionError(`unexpected ${t.text} in gen expression ${shown(source)}`);
    }
    return { program, names };
}
function floorDiv(a, b) {
    const q = a / b;
    return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}
function floorMod(a, b) {
    const r = a % b;
    return r !== 0n && r < 0n !== b < 0n ? r + b : r;
}
function run(program, env, source) {
    const stack = [];
    for (const ins of program) {
        let value;
        switch (ins.op) {
            case "int":
                stack.push(ins.value);
                continue;
            case "name": {
                const v = Object.prototype.hasOwnProperty.call(env, ins.name) ? env[ins.name] : undefined;
                if (v === undefined) {
                    throw new GenExpressionError(`unknown name ${ins.name} in gen expression ${shown(source)}`);
                }
                if (!Number.isSafeInteger(v)) {
                    throw new GenExpressionError(`${ins.name} = ${v} is not an integer within 2^53 - 1`);
                }
                value = BigInt(v);
                break;
            }
            case "neg":
                value = -stack.pop();
                break;
            default: {
                const b = stack.pop();
                const a = stack.pop();
                if ((ins.op === "//" || ins.op === "%") && b === 0n) {
                    throw new GenExpressionError(`division by zero in gen expression ${shown(source)}`);
                }
                if (ins.op === "+")
                    value = a + b;
                else if (ins.op === "-")
                    value = a - b;
                else if (ins.op === "*")
                    value = a * b;
                else if (ins.op === "//")
                    value = floorDiv(a, b);
                else
                    value = floorMod(a, b);
            }
        }
        if (value > MAX_MAGNITUDE || value < -MAX_MAGNITUDE) {
            throw new GenExpressionError(`gen expression ${shown(source)} overflows (a value beyond ${MAX_MAGNITUDE})`);
        }
        stack.push(value);
    }
    return stack[0];
}
/** Compile an expression such as `2048 + chunk_i * 4194304` into a function of its names. */
export function compileExpression(source) {
    if (source.length > MAX_EXPRESSION_LENGTH) {
        throw new GenExpressionError(`gen expression longer than ${MAX_EXPRESSION_LENGTH} characters`);
    }
    const { program, names } = parse(source, tokenize(source));
    return { evaluate: (env) => run(program, env, source), names };
}
