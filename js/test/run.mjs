// `npm test`: write the fixtures with Python (h5py, numpy, shadowzarr_spec), then run the Node
// tests and the Chromium tests. PYTHON overrides the interpreter (default: `uv run python`).
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve(here, "..", "test-output", "fixtures");
rmSync(fixtures, { recursive: true, force: true });
mkdirSync(fixtures, { recursive: true });

const script = join(here, "make_fixtures.py");
const [cmd, ...args] = process.env.PYTHON ? [process.env.PYTHON] : ["uv", "run", "python"];
const made = spawnSync(cmd, [...args, script, fixtures], { stdio: "inherit" });
if (made.status !== 0) {
  console.error(`writing the fixtures failed (${cmd} ${args.join(" ")} ${script})`);
  process.exit(made.status ?? 1);
}

const only = process.argv.slice(2);
const files = only.length ? only : ["test/node/", "test/browser/"];
const run = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...files], {
  stdio: "inherit",
  cwd: resolve(here, ".."),
  env: { ...process.env, SHADOWZARR_FIXTURES: fixtures },
});
process.exit(run.status ?? 1);
