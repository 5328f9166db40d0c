/**
 * `{{…}}` templates: a reference URL with `{{u0}}` (a name from `templates`), and gen fields
 * whose `{{…}}` hold integer arithmetic over dimension names.
 */
import { compileExpression, type Environment, type Expression } from "./arithmetic.js";
import { ReferenceFormatError } from "./errors.js";

type Part = { kind: "text"; text: string } | { kind: "expr"; source: string; evaluate: Expression };

export interface CompiledTemplate {
  readonly source: string;
  /** Render with string substitutions (`templates`) and integer values (gen dimensions). */
  render(env: Environment, strings?: Readonly<Record<string, string>>): string;
  /** Render a template that must be one integer expression, e.g. `{{2048 + i * 4}}` or `"64"`. */
  integer(env: Environment): bigint;
}

const PLACEHOLDER = /\{\{(.*?)\}\}/gs;

export function compileTemplate(source: string): CompiledTemplate {
  const parts: Part[] = [];
  let last = 0;
  for (const m of source.matchAll(PLACEHOLDER)) {
    const at = m.index ?? 0;
    if (at > last) parts.push({ kind: "text", text: source.slice(last, at) });
    const inner = (m[1] ?? "").trim();
    parts.push({ kind: "expr", source: inner, evaluate: compileExpression(inner).evaluate });
    last = at + m[0].length;
  }
  if (last < source.length) parts.push({ kind: "text", text: source.slice(last) });

  return {
    source,
    render(env, strings = {}) {
      let out = "";
      for (const part of parts) {
        if (part.kind === "text") out += part.text;
        else if (part.source in strings) out += strings[part.source];
        else out += part.evaluate(env).toString();
      }
      return out;
    },
    integer(env) {
      const text = parts.length === 1 && parts[0]?.kind === "expr" ? null : this.render(env);
      if (text === null) return (parts[0] as { evaluate: Expression }).evaluate(env);
      if (!/^\s*-?\d+\s*$/.test(text)) {
        throw new ReferenceFormatError(`${JSON.stringify(source)} is not an integer template`);
      }
      return BigInt(text.trim());
    },
  };
}

/** Replace `{{name}}` by `templates[name]` in a reference URL (no arithmetic there). */
export function expandUrlTemplates(
  url: string,
  templates: Readonly<Record<string, string>>,
): string {
  if (!url.includes("{{")) return url;
  return url.replace(PLACEHOLDER, (whole, inner: string) => {
    const name = inner.trim();
    const value = templates[name];
    if (value === undefined) {
      throw new ReferenceFormatError(`unknown template ${JSON.stringify(name)} in ${url}`);
    }
    return value;
  });
}
