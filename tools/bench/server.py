"""The benchmarks' server in a child process, driven over a line protocol on stdin: for the
single-range server (as S3) `shadowzarr_testing.single_range.SingleRangeServer`, for the
multi-range one nginx behind `LatencyProxy`.

The server's CPU (one GIL, event loop, bandwidth pacing) must not compete with the client being
measured, so it runs in its own interpreter. Requests and bytes are counted at the server, the
only place every peer's traffic passes through, whatever HTTP client it uses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CHILD = """
import contextlib, json, sys
from shadowzarr_testing.nginx import NginxServer
from shadowzarr_testing.proxy import LatencyProxy
from shadowzarr_testing.single_range import SingleRangeServer
root, latency, bandwidth = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) or None
ranges, connect_latency, which = sys.argv[4], float(sys.argv[5]), sys.argv[6]
with contextlib.ExitStack() as stack:
    if ranges == "s3" and which == "range":
        proxy = stack.enter_context(SingleRangeServer(
            root, latency=latency, connect_latency=connect_latency, bandwidth=bandwidth))
    else:
        nginx = stack.enter_context(NginxServer(root))
        own = root if ranges == "s3" else None  # answered from the files by the proxy itself
        proxy = stack.enter_context(LatencyProxy(
            nginx.url(""), latency=latency, connect_latency=connect_latency,
            bandwidth=bandwidth, ranges=ranges, root=own))
    print(json.dumps({"url": proxy.url("")}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] == "stats":
            proxy.wait_idle(timeout=60)
            print(json.dumps({"requests": proxy.requests, "bytes": proxy.bytes_sent(),
                              "max_concurrent": proxy.max_concurrent,
                              "connections": proxy.connections,
                              "round_trips": proxy.round_trips()}), flush=True)
        elif command[0] == "file":  # the counts of one file's requests
            proxy.wait_idle(timeout=60)
            print(json.dumps({"requests": proxy.count(path_prefix=command[1]),
                              "bytes": proxy.bytes_sent(command[1]),
                              "round_trips": proxy.round_trips(command[1])}), flush=True)
        elif command[0] == "late":  # how long after its latency each small answer was done
            proxy.wait_idle(timeout=60)
            late = sorted(
                e["duration"] - proxy.latency
                - (proxy.connect_latency if e["new_connection"] else 0)
                for e in proxy.log if e["duration"] is not None and e["bytes"] <= 65536)
            pick = lambda q: round(late[min(len(late) - 1, int(q * len(late)))] * 1000, 2)
            print(json.dumps({"answers": len(late), "median_ms": pick(0.5) if late else None,
                              "p90_ms": pick(0.9) if late else None,
                              "max_ms": pick(1.0) if late else None}), flush=True)
        elif command[0] == "reset":
            proxy.wait_idle(timeout=60)
            proxy.reset()
            print("{}", flush=True)
"""


@dataclass(frozen=True, slots=True)
class ProxyCounts:
    requests: int
    bytes: int
    max_concurrent: int
    round_trips: int = 0
    """Waves of requests (`LatencyProxy.round_trips`)."""
    connections: int = 0
    """Connections opened (`LatencyProxy.connections`)."""


SERVER_KINDS = ("s3", "nginx")
"""``s3``: one range per request, a multi-range request answered 200 with the whole object (as
S3, MinIO and so DANDI's bucket answer), the files answered by `SingleRangeServer` (a bare asyncio
protocol: forwarding each of thousands of small requests to nginx, or answering them through
aiohttp's server at about 0.5 ms of CPU each, would make the server's CPU, not the network,
what is measured); ``nginx``: nginx behind the proxy, multi-range requests answered with their
parts (``multipart/byteranges``)."""
S3_SERVERS = ("range", "proxy")
"""What answers as the single-range server: ``range`` (`SingleRangeServer`, the default) or
``proxy`` (`LatencyProxy(root=..., ranges="s3")`, aiohttp's server: for comparisons)."""


class BenchServer:
    """``root`` served at ``base_url`` through a proxy adding ``latency`` s per request (and
    ``connect_latency`` s more to the first request of each connection: the TCP and TLS
    handshakes) and capping all connections together at ``bandwidth`` bytes/s (None: no cap);
    ``kind`` is how range requests are answered (see `SERVER_KINDS`), ``s3_server`` what
    answers for the single-range kind (see `S3_SERVERS`)."""

    def __init__(
        self,
        root: Path,
        *,
        latency: float,
        bandwidth: float | None,
        kind: str = "nginx",
        connect_latency: float = 0.0,
        s3_server: str = "range",
    ) -> None:
        if kind not in SERVER_KINDS:
            raise ValueError(f"server kind must be one of {SERVER_KINDS}, not {kind!r}")
        if s3_server not in S3_SERVERS:
            raise ValueError(f"s3_server must be one of {S3_SERVERS}, not {s3_server!r}")
        self.latency = latency
        self.connect_latency = connect_latency
        self.bandwidth = bandwidth
        self.kind = kind
        ranges = "s3" if kind == "s3" else "server"
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD,
                str(root),
                str(latency),
                str(bandwidth or 0),
                ranges,
                str(connect_latency),
                s3_server,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = json.loads(self._readline())
        self.base_url: str = hello["url"].rstrip("/") + "/"
        self.pid = self._process.pid
        """The server process (to read its CPU time)."""

    def url(self, name: str) -> str:
        return self.base_url + name

    def reset(self) -> None:
        self._send("reset")
        self._readline()

    def counts(self) -> ProxyCounts:
        self._send("stats")
        return ProxyCounts(**json.loads(self._readline()))

    def file_counts(self, name: str) -> dict[str, int]:
        """Requests, bytes and round trips of the requests for file ``name`` since the last
        reset."""
        self._send(f"file {name}")
        return dict(json.loads(self._readline()))

    def lateness(self) -> dict[str, Any]:
        """How long after its latency (and connection set-up) the server finished each answer
        of at most 64 KiB since the last reset, in ms: ``median_ms``, ``p90_ms``, ``max_ms``
        (what the server's own CPU added: exact latency is 0)."""
        self._send("late")
        return dict(json.loads(self._readline()))

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=30)

    def __enter__(self) -> BenchServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, line: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()

    def _readline(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("benchmark server exited")
        return line
