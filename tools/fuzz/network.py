"""Cases against real servers: faults injected by the proxy, replaced sources, credentials.

The corpus' sources are served by nginx behind the shared `LatencyProxy`; references name them
through the proxy. Three classes of cases:

- ``faults <kind> <sized|unsized>``: every array of one form read twice (the second time from
  the LocalCache the first filled) while the proxy breaks 10% of requests with one fault kind.
  ``sized`` references record sizes and ETags (the v2 JSON and the directory), ``unsized`` ones
  are plain kerchunk (v1). Every value read must be the source's, and every cache row must hold
  the source's bytes at its range; errors must be typed, and every array must read (retries
  overcome a fault at 10%; a refusal counts in "others refused"), but for ``short_end
  unsized``, where a short answer claiming the end of the file is an error by design, and
  ``trickle``, which the deadline ends with `SourceTimeoutError` (no other error allowed).
- ``replaced <local|remote> <new store|long-lived>``: a source is replaced by a file of the
  same size and other bytes after the references were made (`fuzz.replace`: renamed over or
  rewritten in place; a local file's mtime put back or not), before a store opens them or
  between two reads of one store that read the old file; every read after it must raise
  `SourceChangedError` (another error counts in "others refused") or read the original values
  (from a cache), never new bytes nor a mix.
- ``credentials``: a password in a source URL, a signature in a query, and a header bound to one
  origin across a redirect to another; no secret may appear in an error, a log, a cache, or a
  request to the other origin.
"""

from __future__ import annotations

import json
import random
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shadowzarr_testing import FaultRule, LatencyProxy, NginxServer

from fuzz.corpus import Corpus, build_corpus
from fuzz.mutate import SECRET
from fuzz.replace import LOCAL_WAYS, REMOTE_WAYS, replace_source

__all__ = ["FAULTS", "Network", "credential_cases", "fault_cases", "proxy_leaks", "replaced_cases"]

FAULTS: dict[str, list[FaultRule]] = {
    "reset": [FaultRule("reset", probability=0.1)],
    "500": [FaultRule("500", probability=0.1)],
    "503": [FaultRule("503", probability=0.1)],
    "429": [FaultRule("429", probability=0.1, retry_after=0)],
    "truncate": [FaultRule("truncate", probability=0.1)],
    "stall": [FaultRule("stall", probability=0.1, stall_seconds=3.0)],
    "trickle": [FaultRule("trickle", probability=0.1, stall_seconds=0.5)],
    "ignore_if_match": [FaultRule("ignore_if_match", probability=0.5)],
    "ignore_range": [FaultRule("ignore_range", probability=0.1)],
    "wrong_range": [FaultRule("wrong_range", probability=0.1, shift=7, honest=True)],
    "short_end": [FaultRule("short_end", probability=0.1)],
}
LYING: dict[str, list[FaultRule]] = {
    # A server answering other bytes under the Content-Range asked for: no client can tell
    # from the answer alone; only compressed or checksummed chunks catch it (run on request).
    "lying_range": [FaultRule("wrong_range", probability=0.1, shift=7, honest=False)],
}
FAULT_OPTIONS: dict[str, Any] = {
    "retries": 6,
    "timeout": 1.0,
    "backoff": 0.01,
    "max_backoff": 0.1,
    "max_connections": 16,
    "deadline": 4.0,
}


class Network:
    """nginx and the proxy, and the corpus served through them."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.www = work / "www"
        self.www.mkdir(parents=True, exist_ok=True)
        self.nginx = NginxServer(self.www).start()
        self.proxy = LatencyProxy(self.nginx.url("")).start()
        self.corpus = self._corpus("served", "data")

    def _corpus(self, name: str, folder: str) -> Corpus:
        corpus = build_corpus(
            self.work / name, data=self.www / folder, base_url=self.proxy.url(folder)
        )
        for form in ("json-v2", "directory"):
            refs = corpus.forms[form]
            refs = refs / "refs.json" if refs.is_dir() else refs
            document = json.loads(refs.read_text())
            for url, source in document.get("sources", {}).items():
                source["etag"] = self._etag(url.replace(self.proxy.url(""), self.nginx.url("")))
            refs.write_text(json.dumps(document))
        return corpus

    def _etag(self, url: str) -> str:
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=10) as response:
            return str(response.headers["ETag"])

    def close(self) -> None:
        self.proxy.stop()
        self.nginx.stop()


def fault_cases(
    network: Network, per_kind: int, seed: int, *, lying: bool = False
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """(class, case, prepare) for each fault kind; ``prepare()`` sets the proxy's faults just
    before the case runs (cases of one kind run one after another). ``lying`` adds a server
    that lies about the bytes it sends (`LYING`)."""
    corpus = network.corpus
    number = 0
    kinds = {**FAULTS, **(LYING if lying else {})}
    for kind, rules in kinds.items():
        for sized in (True, False):
            for repeat in range(per_kind):
                form = ("json-v2", "directory")[repeat % 2] if sized else "json-v1"
                cache = network.work / "caches" / f"{kind}-{sized}-{repeat}"
                shutil.rmtree(cache, ignore_errors=True)
                case = {
                    "id": f"f{number}",
                    "path": str(corpus.forms[form]),
                    "arrays": corpus.arrays[form],
                    "touched": None,
                    "strict_values": True,
                    # Six retries overcome a fault at 10%: every array must read, except where
                    # no size is recorded and a short answer claims the file ends there (an
                    # error by design: nothing proves the chunk may be padded), and under a
                    # trickle, which the deadline ends (its error, and only it, is allowed).
                    "must_read": kind != "trickle" and (sized or kind != "short_end"),
                    **({"allowed_errors": ["SourceTimeoutError"]} if kind == "trickle" else {}),
                    "passes": 2,
                    "options": {**FAULT_OPTIONS, "local_cache": str(cache)},
                    "cache_files": {network.proxy.url("data"): str(network.www / "data")},
                    "expected": str(corpus.expected_file),
                    "strings": str(corpus.root / "strings.json"),
                    "timeout": 180,
                }
                plan_seed = seed * 7919 + number

                def prepare(rules: list[FaultRule] = rules, plan_seed: int = plan_seed) -> None:
                    network.proxy.set_faults(rules, seed=plan_seed)

                number += 1
                yield f"faults {kind} {'sized' if sized else 'unsized'}", case, prepare
    network.proxy.clear_faults()


def replaced_cases(network: Network, count: int, seed: int) -> Iterator[tuple[str, dict, Any]]:
    """Sources replaced (same size, other bytes) after the references were made: before the
    store opens them, or between two reads of one long-lived store (the worker replaces the
    file then); local files renamed over or rewritten in place, their mtime put back or not."""
    rng = random.Random(seed)
    for number in range(count):
        remote = number % 2 == 1
        long_lived = (number // 2) % 2 == 1
        ways = REMOTE_WAYS if remote else LOCAL_WAYS
        how = ways[(number // 4) % len(ways)]
        folder = f"replaced-{number}"
        corpus = network._corpus(folder, folder) if remote else build_corpus(network.work / folder)
        data = network.www / folder if remote else corpus.root / "data"
        victim = data / rng.choice(["plain.bin", "chunks.bin", "raw.bin", "indexed.bin"])
        form = ("json-v2", "directory")[number % 2 if remote else (number // 4) % 2]

        def prepare(victim: Path = victim, how: str = how, now: bool = not long_lived) -> None:
            if now:
                replace_source(victim, how)

        case = {
            "id": f"r{number}",
            "name": f"{how}, {victim.name}, {form}",
            "path": str(corpus.forms[form]),
            "arrays": corpus.arrays[form],
            "touched": None,
            "strict_values": True,
            "allowed_errors": ["SourceChangedError"],
            "expected": str(corpus.expected_file),
            "strings": str(corpus.root / "strings.json"),
        }
        if long_lived:
            case["replace_between_reads"] = {"path": str(victim), "how": how}
        where = "remote" if remote else "local"
        yield f"replaced {where} {'long-lived' if long_lived else 'new store'}", case, prepare


def credential_cases(network: Network) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """A password, a signature and a bound header, each of which must stay where it belongs."""
    www = network.www
    (www / "creds").mkdir(exist_ok=True)
    (www / "creds" / "x.bin").write_bytes(bytes(range(256)) * 4)
    proxy = network.proxy
    port_url = proxy.url("")
    meta = json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [256],
            "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes"}],
            "attributes": {},
        }
    )
    group = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    authority = port_url.split("://", 1)[1].rstrip("/")
    urls = {
        "password in a missing URL": f"http://user:{SECRET}@{authority}/creds/missing.bin",
        "password in a URL": f"http://user:{SECRET}@{authority}/creds/x.bin",
        "signature in a missing URL": f"{port_url}creds/missing.bin?X-Amz-Signature={SECRET}",
        "token in a missing URL": f"{port_url}creds/missing.bin?token={SECRET}&a=1",
    }
    proxy.add_asset("fuzz-asset", "creds/x.bin")
    for number, (name, url) in enumerate(urls.items()):
        path = network.work / f"credentials-{number}.json"
        path.write_text(
            json.dumps(
                {
                    "version": 1,
                    "refs": {"zarr.json": group, "a/zarr.json": meta, "a/c/0": [url, 0, 256]},
                }
            )
        )
        cache = network.work / "caches" / f"credentials-{number}"
        yield (
            "credentials",
            {
                "id": f"c{number}",
                "name": name,
                "path": str(path),
                "arrays": ["a"],
                "touched": [],
                "options": {"local_cache": str(cache)},
                "cache_files": {"http://nowhere/": "/nonexistent"},
            },
            proxy.clear_faults,
        )
    # A header bound to the proxy's origin, across its redirect to another origin.
    path = network.work / "credentials-redirect.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "refs": {
                    "zarr.json": group,
                    "a/zarr.json": meta,
                    "a/c/0": [proxy.asset_download_url("fuzz-asset"), 0, 256],
                },
            }
        )
    )
    yield (
        "credentials",
        {
            "id": "c-redirect",
            "name": "header across a redirect",
            "path": str(path),
            "arrays": ["a"],
            "touched": [],
            "options": {"headers": {port_url: {"X-Token": SECRET}}},
            "check_proxy_secret": True,
        },
        proxy.reset,
    )


def proxy_leaks(network: Network) -> list[str]:
    """Requests to the other origin (the presigned redirect target) that carried the secret."""
    leaks = []
    for entry in network.proxy.log:
        if entry.get("route") == "presigned" and any(
            SECRET in str(value) for value in entry.get("headers", {}).values()
        ):
            leaks.append(f"{entry.get('route')} {entry.get('path')}: the secret was sent there")
    return leaks
