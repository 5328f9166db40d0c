"""Remote TIFFs through nginx: same references as from the local file, in few requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
import tifffile
from shadowzarr_spec import SourceError, SourceNotFoundError, rfs_to_json
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import TransportOptions
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_tiff import BlockFile, generate_rfs_tiff

if TYPE_CHECKING:
    from shadowzarr_testing.nginx import NginxServer

pytestmark = pytest.mark.network

RNG = np.random.default_rng(11)


def _uneven_stack(pages: int, shape: tuple[int, int] = (24, 20)) -> bytes:
    """A stack whose IFDs are evenly spaced but which tifffile must walk page by page."""
    import io

    buffer = io.BytesIO()
    with tifffile.TiffWriter(buffer) as tif:
        for _ in range(pages):
            tif.write(
                RNG.integers(0, 60000, shape, dtype=np.uint16),
                contiguous=False,
                metadata=None,
                photometric="minisblack",
                compression="zlib",
            )
    return buffer.getvalue()


def test_remote_stack_matches_local_in_few_requests(nginx: NginxServer) -> None:
    pages = 400
    path = nginx.write_file("stack.tif", _uneven_stack(pages))
    url = nginx.url("stack.tif")
    nginx.reset()
    remote = generate_rfs_tiff(url)
    requests = nginx.count("GET")
    local = generate_rfs_tiff(path, url=url)
    assert rfs_to_json(remote)["refs"] == rfs_to_json(local)["refs"]
    # 400 IFDs, guessed ahead along the chain: a handful of rounds, not one request per page.
    assert requests <= 40, requests
    source = remote.sources[url]
    assert source.size == path.stat().st_size
    assert source.etag  # nginx sends one
    with tifffile.TiffFile(path) as tif:
        expected = tif.series[0].asarray()
    assert_array_equal_exact(open_rfs(remote)["0"][...], expected, "remote stack")


def test_remote_ome_pyramid(nginx: NginxServer) -> None:
    import io

    data = RNG.integers(0, 4000, (2, 128, 96), dtype=np.uint16)
    buffer = io.BytesIO()
    with tifffile.TiffWriter(buffer, ome=True) as tif:
        options = {"tile": (32, 32), "photometric": "minisblack", "compression": "lzw"}
        tif.write(data, subifds=2, metadata={"axes": "CYX"}, **options)
        tif.write(data[:, ::2, ::2].copy(), subfiletype=1, **options)
        tif.write(data[:, ::4, ::4].copy(), subfiletype=1, **options)
    path = nginx.write_file("pyramid.ome.tif", buffer.getvalue())
    rfs = generate_rfs_tiff(nginx.url("pyramid.ome.tif"))
    group = open_rfs(rfs)
    with tifffile.TiffFile(path) as tif:
        for level_index, level in enumerate(tif.series[0].levels):
            assert_array_equal_exact(
                group[f"0/{level_index}"][...], level.asarray(), f"level {level_index}"
            )


def test_local_copy_of_a_url_is_read_without_asking_the_url(nginx: NginxServer) -> None:
    """The URL may be gone: only the copy is read (its size recorded, the ETag unknown)."""
    path = nginx.write_file("copy.tif", _uneven_stack(3))
    url = nginx.url("copy.tif")
    nginx.reset()
    rfs = generate_rfs_tiff(url, local_path=path)
    assert nginx.count() == 0
    assert {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")} == {url}
    assert rfs.sources[url].size == path.stat().st_size
    assert rfs.sources[url].etag is None
    with tifffile.TiffFile(path) as tif:
        assert_array_equal_exact(open_rfs(rfs)["0"][...], tif.series[0].asarray(), "copy")


def test_http_file_reads_exact_bytes(nginx: NginxServer) -> None:
    payload = RNG.integers(0, 255, 300_000, dtype=np.uint8).tobytes()
    nginx.write_file("blob.bin", payload)
    with BlockFile(nginx.url("blob.bin"), block_size=4096, read_ahead=8192) as handle:
        assert handle.size == len(payload)
        for start, length in [(0, 10), (4090, 20), (123_456, 70_000), (299_990, 100)]:
            handle.seek(start)
            assert handle.read(length) == payload[start : start + length]
        handle.seek(-5, 2)
        assert handle.read() == payload[-5:]


def test_missing_url_is_source_not_found(nginx: NginxServer) -> None:
    with pytest.raises(SourceNotFoundError, match=r"absent\.tif"):
        generate_rfs_tiff(nginx.url("absent.tif"))


def test_ifds_far_apart_are_fetched_in_few_requests_with_few_bytes(nginx: NginxServer) -> None:
    """200 pages of 64 KiB: the IFDs are guessed along the chain and asked for many ranges
    per request, without reading the pixels in between."""
    import io

    buffer = io.BytesIO()
    frame = np.zeros((128, 256), dtype=np.uint16)
    with tifffile.TiffWriter(buffer) as tif:
        for index in range(200):
            tif.write(frame + index, contiguous=False, metadata=None, photometric="minisblack")
    nginx.write_file("far.tif", buffer.getvalue())
    url = nginx.url("far.tif")
    with BlockFile(url) as handle:
        with tifffile.TiffFile(handle, name="far.tif") as tif:
            assert len(tif.series[0]) == 200
        assert handle.stats.requests <= 12, handle.stats
        assert handle.stats.bytes < 2_000_000, handle.stats
        assert handle.multipart_ranges is True
    with BlockFile(url, transport=TransportOptions(multi_range=False)) as handle:
        with tifffile.TiffFile(handle, name="far.tif") as tif:
            offsets = [page.dataoffsets[0] for page in tif.series[0]]
        assert handle.stats.requests > 12  # one range per request
    rfs = generate_rfs_tiff(url)
    assert rfs.gen[0].lookup("0/c/150/0/0").offset == offsets[150]


class _FirstRangeOnly:
    """A server that, like S3, answers a multi-range request with the first range only."""

    def __init__(self, payload: bytes) -> None:
        import http.server
        import threading

        content = payload

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                spec = self.headers["Range"].removeprefix("bytes=").split(",")[0]
                first, last = (int(part) for part in spec.split("-"))
                last = min(last, len(content) - 1)
                body = content[first : last + 1]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(content)}")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", '"s3-like"')
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/stack.tif"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_server_without_multipart_ranges_falls_back_to_single_ranges(tmp_path) -> None:
    import io

    buffer = io.BytesIO()
    frame = np.zeros((128, 256), dtype=np.uint16)
    with tifffile.TiffWriter(buffer) as tif:
        for index in range(60):
            tif.write(frame + index, contiguous=False, metadata=None, photometric="minisblack")
    local = tmp_path / "stack.tif"
    local.write_bytes(buffer.getvalue())
    server = _FirstRangeOnly(buffer.getvalue())
    try:
        remote = generate_rfs_tiff(server.url)
        with BlockFile(server.url) as handle, tifffile.TiffFile(handle, name="s.tif") as tif:
            assert len(tif.series[0]) == 60
            assert handle.multipart_ranges is False
    finally:
        server.close()
    expected = generate_rfs_tiff(local, url=server.url)
    assert rfs_to_json(remote)["refs"] == rfs_to_json(expected)["refs"]
    assert [e.to_json() for e in remote.gen] == [e.to_json() for e in expected.gen]
    assert remote.sources[server.url].etag == '"s3-like"'


def test_transient_failures_are_retried(make_proxy, nginx: NginxServer) -> None:
    path = nginx.write_file("flaky.tif", _uneven_stack(30))
    proxy = make_proxy(nginx.url(""))
    url = proxy.url("flaky.tif")
    proxy.fail_next(2, "503")
    proxy.fail_next(1, "reset")
    proxy.fail_next(1, "truncate")
    rfs = generate_rfs_tiff(url)
    expected = generate_rfs_tiff(path, url=url)
    assert rfs_to_json(rfs)["refs"] == rfs_to_json(expected)["refs"]
    assert sum(1 for entry in proxy.log if entry["fault"]) == 4


def test_persistent_failures_name_the_url(make_proxy, nginx: NginxServer) -> None:
    nginx.write_file("down.tif", _uneven_stack(2))
    proxy = make_proxy(nginx.url(""))
    proxy.fail_matching("down", "500")
    with pytest.raises(SourceError, match=r"down\.tif bytes 0-\d+: HTTP 500 \(gave up"):
        BlockFile(proxy.url("down.tif"), transport=TransportOptions(backoff=0.01))


def test_remote_short_last_strips_are_fetched_together(nginx: NginxServer) -> None:
    import io

    buffer = io.BytesIO()
    data = RNG.integers(0, 60000, (40, 30, 20), dtype=np.uint16)
    tifffile.imwrite(buffer, data, rowsperstrip=8, compression="zlib", photometric="minisblack")
    path = nginx.write_file("short.tif", buffer.getvalue())
    url = nginx.url("short.tif")
    nginx.reset()
    rfs = generate_rfs_tiff(url)
    assert nginx.count("GET") <= 12
    assert rfs_to_json(rfs)["refs"] == rfs_to_json(generate_rfs_tiff(path, url=url))["refs"]
    assert_array_equal_exact(open_rfs(rfs)["0"][...], data, "short strips")


def test_nearly_evenly_spaced_ifds_of_compressed_pages_are_guessed(nginx: NginxServer) -> None:
    """Compressed pages vary in size, so their IFDs are only nearly evenly spaced: the chain
    is walked with widening guesses, a few rounds of requests instead of one per page."""
    import io

    from shadowzarr_tiff.ifd_chain import prefetch_ifd_chain

    frame = np.arange(192 * 256, dtype=np.uint16).reshape(192, 256)
    noise = RNG.integers(0, 16, (8, 192, 256), dtype=np.uint16)
    buffer = io.BytesIO()
    with tifffile.TiffWriter(buffer) as tif:
        for index in range(200):
            tif.write(
                frame + noise[index % 8] + index,
                contiguous=False,
                metadata=None,
                photometric="minisblack",
                compression="zlib",
            )
    path = nginx.write_file("compressed.tif", buffer.getvalue())
    url = nginx.url("compressed.tif")
    with tifffile.TiffFile(path) as tif:
        spacing = np.diff([page.offset for page in tif.pages])
        assert spacing.min() != spacing.max()
    with BlockFile(url) as handle:
        assert prefetch_ifd_chain(handle) == 200
        walked = handle.stats.requests
        with tifffile.TiffFile(handle, name="compressed.tif") as tif:
            assert len(tif.series[0]) == 200
        assert handle.stats.requests - walked <= 2  # tifffile's reads hit the cache
    assert walked <= 20, walked
    assert handle.stats.bytes < len(buffer.getvalue()) / 3
    remote = generate_rfs_tiff(url)
    local = generate_rfs_tiff(path, url=url)
    assert rfs_to_json(remote)["refs"] == rfs_to_json(local)["refs"]


def test_redirected_asset_is_resolved_once_and_referenced_by_its_url(
    make_proxy, nginx: NginxServer
) -> None:
    path = nginx.write_file("asset.tif", _uneven_stack(50))
    proxy = make_proxy(nginx.url(""))
    proxy.add_asset("0f0e", "asset.tif")
    url = proxy.asset_download_url("0f0e")
    rfs = generate_rfs_tiff(url)
    assert proxy.count(path_prefix="/api/") == 1  # later requests go to the presigned URL
    assert rfs.sources[url].size == path.stat().st_size
    assert set(rfs.sources) == {url}
    expected = generate_rfs_tiff(path, url=url)
    assert rfs_to_json(rfs)["refs"] == rfs_to_json(expected)["refs"]


def test_expired_presigned_url_is_renewed(make_proxy, nginx: NginxServer) -> None:
    import time

    nginx.write_file("expiring.bin", bytes(range(256)) * 400)
    proxy = make_proxy(nginx.url(""), presign_ttl=0.3)
    proxy.add_asset("aa11", "expiring.bin")
    with BlockFile(proxy.asset_download_url("aa11"), read_ahead=4096) as handle:
        assert handle.read_at(0, 4) == bytes(range(4))
        time.sleep(0.5)
        assert handle.read_at(80_000, 4) == bytes(range(128, 132))
    assert proxy.count(path_prefix="/api/") == 2
