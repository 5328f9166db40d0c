"""Shared, unpublished test machinery of the shadowzarr workspace.

A real nginx on loopback (`NginxServer`), moto's S3 server on loopback (`MotoS3`), a reverse
proxy with latency, bandwidth, faults, an S3-like ranges mode and a DANDI-like API
(`LatencyProxy`), a real forward proxy (`TinyProxy`, tinyproxy), a server around a test's own
request handler (`handler_server`), a server that keeps every byte it receives and answers
with raw bytes (`RawServer`), bit-exact array comparison, and the pytest plugin that provides
them as fixtures.
"""

from __future__ import annotations

from shadowzarr_testing._ports import free_port
from shadowzarr_testing.compare import assert_array_equal_exact
from shadowzarr_testing.faults import FaultKind, FaultRule
from shadowzarr_testing.handler_server import QuietHandler, handler_server
from shadowzarr_testing.nginx import (
    AccessLogEntry,
    NginxError,
    NginxNotFoundError,
    NginxServer,
    find_nginx,
)
from shadowzarr_testing.proxy import DandiAsset, LatencyProxy, LatencyProxyError
from shadowzarr_testing.raw_server import InFlight, RawRequest, RawServer, range_answer
from shadowzarr_testing.s3 import MotoS3, MotoS3Error
from shadowzarr_testing.tinyproxy import ProxiedRequest, TinyProxy, TinyProxyNotFoundError

__all__ = [
    "AccessLogEntry",
    "DandiAsset",
    "FaultKind",
    "FaultRule",
    "InFlight",
    "LatencyProxy",
    "LatencyProxyError",
    "MotoS3",
    "MotoS3Error",
    "NginxError",
    "NginxNotFoundError",
    "NginxServer",
    "ProxiedRequest",
    "QuietHandler",
    "RawRequest",
    "RawServer",
    "TinyProxy",
    "TinyProxyNotFoundError",
    "assert_array_equal_exact",
    "find_nginx",
    "free_port",
    "handler_server",
    "range_answer",
]
