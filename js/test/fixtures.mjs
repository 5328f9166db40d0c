// Where the fixtures written by make_fixtures.py are (run.mjs sets SHADOWZARR_FIXTURES).
import { existsSync, readFileSync } from "node:fs";

export const FIXTURES = process.env.SHADOWZARR_FIXTURES;
if (!FIXTURES || !existsSync(`${FIXTURES}/expected/manifest.json`)) {
  throw new Error("fixtures missing: run the tests with `npm test` (it writes them first)");
}
export const manifest = JSON.parse(readFileSync(`${FIXTURES}/expected/manifest.json`, "utf8"));
