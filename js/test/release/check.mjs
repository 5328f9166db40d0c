// The release check (`npm run test:release`, run in CI by tests-integration/test_js.py): build
// the tarball the README tells users to install (`npm pack`), install it with zarrita into a new
// consumer project, and check that
//   - the consumer has one copy of zarrita (the package's is a peer dependency);
//   - its types resolve under moduleResolution node10, bundler and nodenext (tsc);
//   - it reads the fixtures' reference directories in Node, equal to what h5py/numpy read;
//   - bundled with esbuild, it reads them in a module Web Worker in headless Chromium, from
//     another origin.
// PYTHON names the interpreter that writes the fixtures (default: `uv run python`).
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS } from "../browser/chromium.mjs";
import { startServer } from "../server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const JS = resolve(here, "..", "..");
const OUT = resolve(JS, "test-output", "release");
const consumer = join(OUT, "consumer");
const fixtures = join(OUT, "fixtures");
const failures = [];

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { encoding: "utf8", ...options });
  if (result.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed (${result.status}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result.stdout;
}

function check(what, ok, detail = "") {
  console.log(`${ok ? "ok" : "FAILED"}: ${what}${detail ? ` (${detail})` : ""}`);
  if (!ok) failures.push(what);
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(consumer, { recursive: true });

// 1. The fixtures, written with h5py/numpy as for `npm test`.
const [python, ...pythonArgs] = process.env.PYTHON ? [process.env.PYTHON] : ["uv", "run", "python"];
run(python, [...pythonArgs, join(JS, "test", "make_fixtures.py"), fixtures], { stdio: "inherit" });
const manifest = JSON.parse(readFileSync(join(fixtures, "expected", "manifest.json"), "utf8"));

// 2. The tarball.
const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", OUT], { cwd: JS }));
const tarball = packed[0].filename;
const shipped = packed[0].files.map((f) => f.path);
check(
  "the tarball holds the built entry points and their types",
  ["dist/index.js", "dist/index.d.ts", "dist/node.js", "dist/node.d.ts", "README.md"].every((f) =>
    shipped.includes(f),
  ),
);
check(
  "the tarball holds no tests or node_modules",
  !shipped.some((f) => /^(test|node_modules)\//.test(f)),
);

// 3. A consumer project that installs it the way the README says.
for (const name of readdirSync(join(here, "consumer")))
  copyFileSync(join(here, "consumer", name), join(consumer, name));
copyFileSync(join(JS, "test", "compare.mjs"), join(consumer, "compare.mjs"));
const lock = JSON.parse(readFileSync(join(JS, "package-lock.json"), "utf8")).packages;
writeFileSync(
  join(consumer, "package.json"),
  JSON.stringify(
    {
      name: "shadowzarr-consumer",
      private: true,
      type: "module",
      dependencies: {
        zarrita: lock["node_modules/zarrita"].version,
        shadowzarr: `file:../${tarball}`,
      },
      devDependencies: { typescript: lock["node_modules/typescript"].version, esbuild: "0.28.2" },
    },
    null,
    2,
  ),
);
run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
  cwd: consumer,
});
const nested = join(consumer, "node_modules", "shadowzarr", "node_modules");
check(
  "one copy of zarrita: the consumer's",
  !existsSync(join(nested, "zarrita")) && existsSync(join(consumer, "node_modules", "zarrita")),
);

// 4. Types under the three module resolutions.
const tsc = join(consumer, "node_modules", ".bin", "tsc");
for (const resolution of ["node10", "bundler", "nodenext"]) {
  const result = spawnSync(tsc, ["-p", `tsconfig.${resolution}.json`], {
    cwd: consumer,
    encoding: "utf8",
  });
  check(
    `types resolve under moduleResolution ${resolution}`,
    result.status === 0,
    result.stdout.trim(),
  );
}

function summarize(results) {
  const checked = results.reduce((n, r) => n + (r.checked ?? 0), 0);
  const bad = results.filter((r) => r.error || r.failures?.length);
  return { checked, bad };
}

// 5. Node.
const inNode = JSON.parse(
  run(process.execPath, ["read.mjs", fixtures, join(consumer, "compare.mjs")], { cwd: consumer }),
);
const node = summarize(inNode);
check(
  `Node reads ${node.checked} arrays through the tarball, equal to h5py/numpy`,
  node.checked > 20 && node.bad.length === 0,
  JSON.stringify(node.bad).slice(0, 2000),
);

// 6. Installed from the folder (`npm install file:…`, a symlink): the application and the
// package then have a copy of zarrita each, and arrays with the fletcher32 codec still read
// (the store checks the checksum itself rather than through a codec registered in its copy).
const folderConsumer = join(OUT, "consumer-folder");
mkdirSync(folderConsumer);
copyFileSync(join(here, "consumer", "read.mjs"), join(folderConsumer, "read.mjs"));
writeFileSync(
  join(folderConsumer, "package.json"),
  JSON.stringify({
    name: "shadowzarr-folder-consumer",
    private: true,
    type: "module",
    dependencies: { zarrita: lock["node_modules/zarrita"].version, shadowzarr: `file:${JS}` },
  }),
);
run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
  cwd: folderConsumer,
});
const fromFolder = summarize(
  JSON.parse(
    run(process.execPath, ["read.mjs", fixtures, join(consumer, "compare.mjs")], {
      cwd: folderConsumer,
    }),
  ),
);
check(
  `a folder install (two copies of zarrita) reads ${fromFolder.checked} arrays, fletcher32 too`,
  existsSync(join(JS, "node_modules", "zarrita")) &&
    fromFolder.checked === node.checked &&
    fromFolder.bad.length === 0,
  JSON.stringify(fromFolder.bad).slice(0, 2000),
);

// 7. A Web Worker in Chromium, the page on one origin and the data on another.
const esbuild = join(consumer, "node_modules", ".bin", "esbuild");
run(
  esbuild,
  ["worker.mjs", "--bundle", "--format=esm", "--log-level=warning", "--outfile=worker.bundle.js"],
  { cwd: consumer },
);
const pageServer = await startServer({ root: consumer });
const dataServer = await startServer({ root: fixtures, cors: "full" });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: CHROMIUM_ARGS,
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${pageServer.url}/index.html`);
  await page.waitForFunction(() => window.__ready === true, null, { timeout: 20000 });
  const answer = await page.evaluate(({ base, manifest }) => window.runWorker(base, manifest), {
    base: dataServer.url,
    manifest,
  });
  const worker = answer.error ? { checked: 0, bad: [answer.error] } : summarize(answer.out);
  check(
    `a Web Worker in Chromium reads ${worker.checked} arrays through the bundled tarball, equal to h5py/numpy`,
    worker.checked === node.checked && worker.bad.length === 0,
    JSON.stringify([worker.bad, errors]).slice(0, 2000),
  );
  check(
    "the worker's reads went to the data origin",
    dataServer.counters.ranges > 0,
    `${dataServer.counters.ranges} range requests`,
  );
} finally {
  await browser.close();
  await pageServer.close();
  await dataServer.close();
}

console.log(
  failures.length === 0
    ? `release check passed (${tarball})`
    : `release check FAILED: ${failures.join("; ")}`,
);
process.exit(failures.length === 0 ? 0 : 1);
