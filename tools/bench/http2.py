"""Our HTTP/1.1 connections against HTTP/2, side by side on one nginx over TLS offering both.

Issue 25 asked for HTTP/2 "where the server offers it". This script is the measurement behind
not building it: aiohttp has no HTTP/2, and the one maintained asyncio client that has it
(httpx with the pure-Python ``h2``) parses every 16 KiB frame in Python. On loopback it moved
bulk ranges at about an eighth of our HTTP/1.1 speed with eight times the CPU, served scattered
4 KiB ranges over its single connection about four times slower than our 128 connections, and
a batch of more than nginx's 1,000 requests per connection (``keepalive_requests``) failed
with a protocol error instead of going on over a new connection. S3, and so DANDI's bucket,
answers HTTP/1.1 only.

    uv run --with 'httpx[http2]' python tools/bench/http2.py          # both clients
    uv run python tools/bench/http2.py                                # ours alone

Rows: ``bulk``, the file in 8 MiB ranges, 10 in flight (zarr's default concurrency); ``N
scattered``, N ranges of 4 KiB at random offsets, all at once. Each run opens a new client
(its handshakes included). Time is the median of 5 runs after an untimed one, CPU this
process's (both cores) in the median run; every answer is checked against the file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

SIZE_MIB = 64
BULK_STEP = 8 * 2**20
BULK_IN_FLIGHT = 10
SMALL = 4096
RUNS = 5

_CONF = """
worker_processes 1; daemon off; user root; pid {work}/nginx.pid; error_log {work}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off; sendfile on;
  client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
  uwsgi_temp_path {work}; scgi_temp_path {work};
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {work}/server.pem; ssl_certificate_key {work}/server.pem;
    root {work}/www;
  }}
}}
"""


def start_nginx(work: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """nginx serving ``work/www`` over TLS with HTTP/2 (ALPN) and HTTP/1.1; its CA file."""
    import trustme
    from shadowzarr_testing import find_nginx, free_port

    authority = trustme.CA()
    authority.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(
        work / "server.pem"
    )
    authority.cert_pem.write_to_path(work / "ca.pem")
    port = free_port()
    (work / "nginx.conf").write_text(_CONF.format(work=work, port=port))
    with (work / "stderr.log").open("wb") as output:
        process = subprocess.Popen(
            [find_nginx(), "-p", f"{work}/", "-c", str(work / "nginx.conf"), "-e", "stderr"],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
    url = f"https://127.0.0.1:{port}/data.bin"
    context = ssl.create_default_context(cafile=str(work / "ca.pem"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, context=context, timeout=1) as answer:
                answer.read(1)
            return process, url, work / "ca.pem"
        except OSError:
            time.sleep(0.05)
    process.kill()
    said = (work / "stderr.log").read_text(errors="replace").strip()
    raise RuntimeError(f"nginx (TLS, HTTP/2) did not start: {said[-500:]}")


type Ranges = list[tuple[int, int]]
type Client = Callable[[str, Ranges, int], Awaitable[list[bytes]]]
"""A client reading ``ranges`` of a URL with so many in flight; its bytes in order."""


def checked(client: Client, data: bytes) -> Callable[[str, Ranges, int], Awaitable[int]]:
    """``client`` returning how many of its answers differ from ``data``: the bytes stay in
    the coroutine, since ``asyncio.run`` can take longer over a large result than the reads
    (Python 3.12's ``signal.getsignal`` formats the task, and so the result, into an error
    message it throws away)."""

    async def run(url: str, ranges: Ranges, in_flight: int) -> int:
        blobs = await client(url, ranges, in_flight)
        return sum(blob != data[a:b] for blob, (a, b) in zip(blobs, ranges, strict=True))

    return run


async def ours(url: str, ranges: Ranges, in_flight: int) -> list[bytes]:
    """Our transport: kept-alive HTTP/1.1 connections (up to 128 per host)."""
    from shadowzarr_store.transport import transport_for

    transport = transport_for()
    try:
        await transport.read(url, 0, 1)  # the first handshake is no range's
        limit = asyncio.Semaphore(in_flight)

        async def one(start: int, end: int) -> bytes:
            async with limit:
                return bytes((await transport.read(url, start, end, view=True)).data)

        return list(await asyncio.gather(*(one(a, b) for a, b in ranges)))
    finally:
        await transport.aclose()


def httpx_http2(cafile: Path) -> Client:
    async def read(url: str, ranges: Ranges, in_flight: int) -> list[bytes]:
        """httpx with HTTP/2: one connection, a stream per range."""
        import httpx

        context = ssl.create_default_context(cafile=str(cafile))
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(http2=True, verify=context, limits=limits) as client:
            await client.get(url, headers={"Range": "bytes=0-0"})
            limit = asyncio.Semaphore(in_flight)

            async def one(start: int, end: int) -> bytes:
                async with limit:
                    answer = await client.get(url, headers={"Range": f"bytes={start}-{end - 1}"})
                    if answer.http_version != "HTTP/2":
                        raise RuntimeError(f"answered over {answer.http_version}")
                    return answer.content

            return list(await asyncio.gather(*(one(a, b) for a, b in ranges)))

    return read


def time_client(
    client: Client, url: str, ranges: Ranges, in_flight: int, data: bytes, runs_wanted: int
) -> str:
    """Median time of ``runs_wanted`` runs after an untimed one (the process's first TLS
    contexts and pages are no client's), with the CPU and throughput of the median run."""
    runs: list[tuple[float, float]] = []
    for index in range(runs_wanted + 1):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            wrong = asyncio.run(checked(client, data)(url, ranges, in_flight))
        except Exception as exc:  # a client's own failure is a result
            return f"failed: {type(exc).__name__}: {str(exc)[:90]}"
        if index:
            runs.append((time.perf_counter() - started, time.process_time() - cpu))
        if wrong:
            return f"WRONG BYTES in {wrong} answers"
    seconds, cpu = sorted(runs)[len(runs) // 2]
    moved = sum(b - a for a, b in ranges)
    return (
        f"{seconds * 1000:7.0f} ms  cpu {cpu * 1000:5.0f} ms  {moved / seconds / 1e6:6.0f} MB/s"
        f"  (runs {', '.join(f'{s * 1000:.0f}' for s, _ in runs)} ms)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scattered", default="900,2000", help="scattered counts (comma list)")
    parser.add_argument("--size-mib", type=int, default=SIZE_MIB, help="size of the file")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args(argv)
    size = args.size_mib * 2**20
    clients: list[tuple[str, Client | str]] = []
    with tempfile.TemporaryDirectory(prefix="shadowzarr-http2-") as folder:
        work = Path(folder)
        (work / "www").mkdir()
        data = random.Random(0).randbytes(size)
        (work / "www" / "data.bin").write_bytes(data)
        process, url, cafile = start_nginx(work)
        os.environ["SSL_CERT_FILE"] = str(cafile)  # our transport trusts what the user trusts
        try:
            clients.append(("ours: HTTP/1.1, kept-alive connections", ours))
            try:
                import h2  # noqa: F401
                import httpx  # noqa: F401

                clients.append(("httpx + h2: HTTP/2, one connection", httpx_http2(cafile)))
            except ImportError:
                missing = "not installed (uv run --with 'httpx[http2]')"
                clients.append(("httpx + h2: HTTP/2", missing))
            cases: list[tuple[str, Ranges, int]] = [
                (
                    f"bulk {size >> 20} MiB in 8 MiB ranges, {BULK_IN_FLIGHT} in flight",
                    [(a, min(a + BULK_STEP, size)) for a in range(0, size, BULK_STEP)],
                    BULK_IN_FLIGHT,
                )
            ]
            for count in (int(n) for n in args.scattered.split(",") if n.strip()):
                picked = sorted(random.Random(count).sample(range(size // SMALL), count))
                ranges = [(i * SMALL, (i + 1) * SMALL) for i in picked]
                cases.append((f"{count} scattered 4 KiB ranges, all at once", ranges, count))
            python = sys.version.split()[0]
            print(f"nginx over TLS on loopback offering h2 and http/1.1; python {python}")
            for case, ranges, in_flight in cases:
                print(case)
                for name, client in clients:
                    result = (
                        client
                        if isinstance(client, str)
                        else time_client(client, url, ranges, in_flight, data, args.runs)
                    )
                    print(f"  {name:42} {result}", flush=True)
        finally:
            process.terminate()  # nginx's fast shutdown: its worker goes too
            process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
