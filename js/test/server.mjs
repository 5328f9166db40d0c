// A small HTTP/1.1 range server for the tests and the benchmark, with counters (requests, bytes,
// in flight, OPTIONS), a latency setting, a mode that ignores Range, CORS variants, ETags
// (the quoted md5 of the file) with If-Match, and a DANDI-like redirect route.
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";

const TYPES = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".json": "application/json",
  ".map": "application/json",
  ".wasm": "application/wasm",
};

/**
 * cors: "none" (no CORS headers), "full" (allow Range and If-Match, expose Content-Range and
 * ETag), "noexpose" (allow both, expose nothing), "rangeonly" (If-Match not allowed).
 */
export async function startServer({
  root,
  latencyMs = 0,
  ignoreRange = false,
  cors = "none",
  // Node's fetch subtracts 1 s from the server's keep-alive hint: 1000 means no socket is reused.
  keepAliveMs = 1000,
} = {}) {
  const counters = {
    requests: 0,
    gets: 0,
    ranges: 0,
    options: 0,
    bytes: 0,
    inFlight: 0,
    maxInFlight: 0,
    redirects: 0,
    status412: 0,
    aborted: 0,
    sockets: 0,
    paths: new Map(),
  };
  const settings = { latencyMs, ignoreRange, cors };
  const files = new Map();

  // One read (and md5) per file version, shared by concurrent requests.
  async function load(path) {
    const info = await stat(path);
    const stamp = `${info.size}:${info.mtimeMs}`;
    const cached = files.get(path);
    if (cached?.stamp === stamp) return cached.entry;
    const entry = readFile(path).then((body) => ({
      body,
      etag: `"${createHash("md5").update(body).digest("hex")}"`,
    }));
    files.set(path, { stamp, entry });
    entry.catch(() => files.delete(path));
    return entry;
  }

  function corsHeaders(res) {
    if (settings.cors === "none") return;
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader(
      "Access-Control-Allow-Headers",
      settings.cors === "rangeonly" ? "Range" : "Range, If-Match",
    );
    res.setHeader("Access-Control-Max-Age", "600");
    if (settings.cors === "full") {
      res.setHeader("Access-Control-Expose-Headers", "Content-Range, ETag, Content-Length");
    }
  }

  const server = createServer(async (req, res) => {
    counters.requests++;
    counters.inFlight++;
    counters.maxInFlight = Math.max(counters.maxInFlight, counters.inFlight);
    res.on("close", () => counters.inFlight--);
    try {
      if (settings.latencyMs > 0) await new Promise((r) => setTimeout(r, settings.latencyMs));
      if (res.destroyed) {
        counters.aborted++; // the client gave up while the answer was delayed
        return;
      }
      const url = new URL(req.url, "http://localhost");
      const path = decodeURIComponent(url.pathname);
      counters.paths.set(path, (counters.paths.get(path) ?? 0) + 1);
      res.setHeader("Cache-Control", "no-store");
      corsHeaders(res);
      if (req.method === "OPTIONS") {
        counters.options++;
        res.writeHead(204).end();
        return;
      }
      counters.gets++;
      const dandi = /^\/dandi\/api\/assets\/([^/]+)\/download\/?$/.exec(path);
      if (dandi) {
        counters.redirects++;
        res.writeHead(302, { Location: `http://${req.headers.host}/data/${dandi[1]}` }).end();
        return;
      }
      const file = normalize(join(root, path));
      if (!file.startsWith(normalize(root))) {
        res.writeHead(403).end();
        return;
      }
      let entry;
      try {
        entry = await load(file);
      } catch {
        res.writeHead(404).end();
        return;
      }
      const { body, etag } = entry;
      res.setHeader("ETag", etag);
      res.setHeader("Accept-Ranges", "bytes");
      res.setHeader("Content-Type", TYPES[extname(file)] ?? "application/octet-stream");
      if (file.endsWith("-csp.html")) {
        // A strict policy: no eval, no Function, scripts only from here or with the nonce.
        res.setHeader(
          "Content-Security-Policy",
          "default-src 'self'; script-src 'self' 'nonce-shadowzarr'; connect-src *",
        );
      }
      const ifMatch = req.headers["if-match"];
      if (ifMatch !== undefined && ifMatch !== "*" && ifMatch !== etag) {
        counters.status412++;
        res.writeHead(412).end();
        return;
      }
      const range = req.headers.range;
      if (range === undefined || settings.ignoreRange) {
        counters.bytes += body.length;
        res.writeHead(200, { "Content-Length": body.length }).end(body);
        return;
      }
      counters.ranges++;
      const m = /^bytes=(\d*)-(\d*)$/.exec(range);
      if (!m || (m[1] === "" && m[2] === "")) {
        res.writeHead(416, { "Content-Range": `bytes */${body.length}` }).end();
        return;
      }
      let start, end;
      if (m[1] === "") {
        start = Math.max(0, body.length - Number(m[2]));
        end = body.length;
      } else {
        start = Number(m[1]);
        end = m[2] === "" ? body.length : Math.min(body.length, Number(m[2]) + 1);
      }
      if (start >= body.length) {
        res.writeHead(416, { "Content-Range": `bytes */${body.length}` }).end();
        return;
      }
      const part = body.subarray(start, end);
      counters.bytes += part.length;
      res
        .writeHead(206, {
          "Content-Range": `bytes ${start}-${end - 1}/${body.length}`,
          "Content-Length": part.length,
        })
        .end(part);
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  });
  server.on("connection", () => counters.sockets++);
  server.keepAliveTimeout = keepAliveMs;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    counters,
    settings,
    reset() {
      for (const k of Object.keys(counters)) if (typeof counters[k] === "number") counters[k] = 0;
      counters.paths.clear();
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
