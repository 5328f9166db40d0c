import { applyExtensions } from "./extend.js";
export function extendArray(array, ...extensions) {
    return applyExtensions(array, extensions);
}
