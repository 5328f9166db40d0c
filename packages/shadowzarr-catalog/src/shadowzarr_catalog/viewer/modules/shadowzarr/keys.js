/**
 * Keys and index paths that are safe: the same checks as the Python reader
 * (`shadowzarr_spec.keys`), so both refuse the same reference files.
 */
import { UnsafePathError } from "./errors.js";
export const MAX_KEY_LENGTH = 4096;
function shown(text) {
    return JSON.stringify(text.slice(0, 80));
}
/** Refuse keys that are not relative, normalised paths (no `..`, no leading `/`). */
export function checkKey(key) {
    if (typeof key !== "string" || key.length === 0 || key.length > MAX_KEY_LENGTH) {
        throw new UnsafePathError(`invalid key ${shown(String(key))}`);
    }
    if (key.startsWith("/") || key.includes("\\") || key.includes("\u0000")) {
        throw new UnsafePathError(`key ${shown(key)} must be a relative path`);
    }
    const empty = key.endsWith("/") || key.includes("//");
    if (empty || (key.includes(".") && key.split("/").some((p) => p === "." || p === ".."))) {
        throw new UnsafePathError(`key ${shown(key)} has an empty, '.' or '..' part`);
    }
}
/** Refuse index paths that would leave the reference directory. */
export function checkRelativePath(path) {
    if (path === "" || path.startsWith("/") || path.includes("\\") || path.includes("\u0000")) {
        throw new UnsafePathError(`index path ${shown(path)} must be relative`);
    }
    const trimmed = path.replace(/\/+$/, "");
    // Python: posixpath.normpath(path) must equal the path without its trailing slashes and must
    // not start with "..": "." passes, and any empty, "." or ".." part does not.
    const normal = trimmed === "." || trimmed.split("/").every((p) => p !== "" && p !== "." && p !== "..");
    if (!normal || trimmed.startsWith("..")) {
        throw new UnsafePathError(`index path ${shown(path)} escapes the reference directory`);
    }
}
