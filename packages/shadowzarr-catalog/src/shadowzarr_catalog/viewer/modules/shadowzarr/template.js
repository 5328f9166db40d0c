/**
 * `{{…}}` templates, as the README of shadowzarr-spec defines them: a placeholder is `{{`, the
 * shortest text up to the next `}}` (across lines), and `}}`; a `{{` left without its `}}` is an
 * error. Reference and index URLs may hold only template names (`{{u0}}`, from `templates`);
 * gen fields may also hold integer arithmetic over dimension names. Template values are
 * inserted as they are and never read again as templates.
 */
import { compileExpression, stripWhitespace, } from "./arithmetic.js";
import { GenExpressionError, ReferenceFormatError } from "./errors.js";
const PLACEHOLDER = /\{\{(.*?)\}\}/gs;
const DIGITS = /^[0-9]+$/;
function literal(text, template) {
    if (text.includes("{{")) {
        throw new GenExpressionError(`unbalanced '{{' in template ${JSON.stringify(template.slice(0, 200))}`);
    }
    return text;
}
export function compileTemplate(source) {
    const parts = [];
    const names = new Set();
    const placeholders = [];
    let last = 0;
    for (const m of source.matchAll(PLACEHOLDER)) {
        const at = m.index ?? 0;
        if (at > last)
            parts.push({ kind: "text", text: literal(source.slice(last, at), source) });
        const inner = m[1] ?? "";
        const compiled = compileExpression(inner);
        compiled.names.forEach((n) => names.add(n));
        placeholders.push(stripWhitespace(inner));
        parts.push({ kind: "expr", source: inner, ...compiled });
        last = at + m[0].length;
    }
    if (last < source.length)
        parts.push({ kind: "text", text: literal(source.slice(last), source) });
    const render = (env) => {
        let out = "";
        for (const part of parts)
            out += part.kind === "text" ? part.text : part.evaluate(env).toString();
        return out;
    };
    return {
        source,
        names,
        placeholders,
        render,
        integer(env, what) {
            const text = render(env);
            const value = DIGITS.test(text) ? Number(text) : Number.NaN;
            if (!Number.isSafeInteger(value)) {
                throw new GenExpressionError(`gen ${what} renders as ${JSON.stringify(text.slice(0, 40))}, not an integer from 0 ` +
                    `to ${Number.MAX_SAFE_INTEGER}`);
            }
            return value;
        },
    };
}
/**
 * Replace each `{{ name }}` naming one of `templates` by its value. `strict` (reference and
 * index URLs): every placeholder must name a template; otherwise the others are kept for gen
 * arithmetic.
 */
export function expandNamedTemplates(text, templates, strict) {
    if (!text.includes("{{"))
        return text;
    let out = "";
    let last = 0;
    for (const m of text.matchAll(PLACEHOLDER)) {
        const at = m.index ?? 0;
        out += literal(text.slice(last, at), text);
        const name = stripWhitespace(m[1] ?? "");
        if (Object.prototype.hasOwnProperty.call(templates, name)) {
            out += templates[name];
        }
        else if (strict) {
            throw new ReferenceFormatError(`URL ${JSON.stringify(text.slice(0, 200))} uses an undefined template ${JSON.stringify(name)}`);
        }
        else {
            out += m[0];
        }
        last = at + m[0].length;
    }
    return out + literal(text.slice(last), text);
}
