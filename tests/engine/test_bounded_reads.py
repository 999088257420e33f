"""Hostile or broken stores cannot make a read take unbounded memory or download: zip members
inflate step by step within the limits, whatever their directory entries say; a stored chunk
is read no further than one byte past the largest valid encoding of its codecs; and
storage_options cannot make a remote client read local files."""
import errno
import json
import os
import struct
import subprocess
import sys
import threading
import zlib
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import zarrcore
from zarrcore.runtime.config import size_with_slack
from zarrcore.errors import StoreURLError, ValueTooLargeError
from zarrcore.storage import ZipStore, make_store

GIB = 1 << 30
ARRAY_JSON = json.dumps({
    "zarr_format": 3, "node_type": "array", "shape": [16], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "bytes"}],
}).encode()


def _deflated_zeros(n_mib):
    """(raw deflate stream of n_mib MiB of zero bytes, its CRC-32), made in milliseconds: one
    fully flushed block of 1 MiB (no reference before its start) repeated."""
    mib = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(n_mib):
        crc = zlib.crc32(mib, crc)
    return block * n_mib + zlib.compressobj(9, zlib.DEFLATED, -15).flush(), crc


def _write_zip(path, members):
    """A zip of `members`: name -> (data, method, crc, size declared in the directory)."""
    out, directory = bytearray(), bytearray()
    for name, (data, method, crc, size) in members.items():
        name = name.encode()
        directory += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, method, 0, 33,
                                 crc, len(data), size, len(name), 0, 0, 0, 0, 0, len(out)) + name
        out += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, method, 0, 33, crc, len(data),
                           size, len(name), 0) + name + data
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(members), len(members),
                      len(directory), len(out), 0)
    with open(path, "wb") as f:
        f.write(out + directory + end)


def _stored(data):
    return data, 0, zlib.crc32(data), len(data)


@pytest.fixture(scope="module")
def bomb_zip(tmp_path_factory):
    """A zip (about 1 MiB) of an array whose chunk, and of a node whose zarr.json, inflate to
    1 GiB of zeros."""
    raw, crc = _deflated_zeros(1024)
    path = str(tmp_path_factory.mktemp("bomb") / "bomb.zip")
    _write_zip(path, {"a/zarr.json": _stored(ARRAY_JSON), "a/c/0": (raw, 8, crc, GIB),
                      "b/zarr.json": (raw, 8, crc, GIB)})
    assert os.path.getsize(path) < 3 << 20
    return path


_READ_BOMB = """
import resource, sys
import zarrcore
from zarrcore.errors import ValueTooLargeError
from zarrcore.storage import ZipStore

store = ZipStore(sys.argv[1], mode="r")
a = zarrcore.open_array(store, path="a")
for how in ("chunk", "verify", "zarr.json"):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = "read"
    try:
        if how == "chunk":
            a[...]
        elif how == "verify":
            problems = zarrcore.tools.verify(store, "a").problems
            message = " ".join(p.detail for p in problems if p.key == "a/c/0") or "no problem"
        else:
            zarrcore.open_array(store, path="b")
    except ValueTooLargeError as e:
        message = str(e)
    print(message)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grown >> 10)  # MiB (ru_maxrss is in KiB)
"""


def test_zip_bomb_is_refused_in_bounded_memory(bomb_zip):
    """Read as a chunk, by verify and as zarr.json, in a process of its own whose peak
    memory shows what each took."""
    env = {**os.environ, "ZARRCORE_MAX_CHUNK_BYTES": str(16 << 20), "ZARRCORE_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", _READ_BOMB, bomb_zip], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 6, done.stdout
    for (message, grown), key, limit in zip(
            zip(lines[::2], lines[1::2]), ["a/c/0", "a/c/0", "b/zarr.json"],
            # The 16-byte chunk of the bytes codec, then a value read whole: with slack.
            [size_with_slack(16), size_with_slack(16), size_with_slack(16 << 20)]):
        assert f"key {key!r}" in message and f"more than {limit} bytes" in message, message
        assert int(grown) < 100  # MiB; inflating the member whole takes 1024


_READ_LOCAL = """
import resource, sys
import zarrcore
from zarrcore.errors import ChunkDecodeError

a = zarrcore.open_array(sys.argv[1])
for read in (lambda: a[...], lambda: a.oindex[[0, 3]], lambda: a.native_handle().read((0,), (4,))):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        read()
        print("read")
    except ChunkDecodeError as e:
        print(e)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10)  # MiB
"""


@pytest.mark.parametrize("compressor", ["gzip", "blosc"])
def test_local_chunk_file_far_larger_than_its_chunk_is_not_read(tmp_path, compressor):
    """The compiled batches and the native handle refuse a chunk file larger than any valid
    chunk of its codecs before reading it: a 1 GiB (sparse) file behind a 16-byte chunk."""
    path = str(tmp_path / "a.zarr")
    zarrcore.create_array(path, shape=(4,), chunks=(4,), dtype="int32",
                          compressors=[compressor])[...] = 1
    with open(os.path.join(path, "c", "0"), "r+b") as f:
        f.truncate(GIB)
    done = subprocess.run([sys.executable, "-c", _READ_LOCAL, path], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 6, done.stdout
    for message, grown in zip(lines[::2], lines[1::2]):
        assert "'c/0'" in message and "oversized" in message, message
        assert int(grown) < 100  # MiB; reading the file whole takes 1024


def test_compiled_reads_refuse_an_oversized_chunk_file_as_python_reads_do(tmp_path):
    """A chunk file larger than any valid chunk: the compiled batch raises what the Python
    routes raise, ValueTooLargeError (EFBIG) naming the key."""
    path = str(tmp_path / "a.zarr")
    a = zarrcore.create_array(path, shape=(8,), chunks=(4,), dtype="int32", compressors=None)
    a[...] = 1
    with open(os.path.join(path, "c", "0"), "r+b") as f:
        f.truncate(1 << 20)
    for read in (lambda: a[...], lambda: a.oindex[[0, 3]], lambda: a.vindex[[0, 5]]):
        with pytest.raises(ValueTooLargeError, match=r"'c/0'.*oversized") as caught:
            read()
        assert caught.value.errno == errno.EFBIG


def test_zip_entry_that_understates_its_size(tmp_path):
    raw, crc = _deflated_zeros(16)
    path = str(tmp_path / "lie.zip")
    _write_zip(path, {"zarr.json": _stored(ARRAY_JSON), "c/0": (raw, 8, crc, 16)})
    store = ZipStore(path, mode="r")
    with pytest.raises(ValueTooLargeError, match=r"'c/0'.* more than 16 bytes.*declares"):
        store.get("c/0")
    with pytest.raises(ValueTooLargeError, match=r"'c/0'.* more than 16 bytes"):
        zarrcore.open_array(store)[...]


def test_zip_entry_that_overstates_its_size(tmp_path):
    raw, crc = _deflated_zeros(1)
    path = str(tmp_path / "lie.zip")
    _write_zip(path, {"zarr.json": (zlib.compress(ARRAY_JSON)[2:-4], 8,
                                    zlib.crc32(ARRAY_JSON), 0xFFFFFFF0),
                      "c/0": (raw, 8, crc, 16 << 20)})
    store = ZipStore(path, mode="r")
    # Refused from the directory entry, before anything is inflated.
    with pytest.raises(ValueTooLargeError, match=r"'zarr.json'.* more than \d+ bytes"):
        zarrcore.open_array(store)
    with zarrcore.config.set(max_chunk_bytes=1 << 20):
        with pytest.raises(ValueTooLargeError, match=r"'c/0'"):
            store.get("c/0")


def test_zip_members_of_every_method_read_back(tmp_path):
    import zipfile

    data = np.arange(1000, dtype="int32")
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        with ZipStore(tmp_path / f"{method}.zip", mode="w", compression=method) as store:
            zarrcore.create_array(store, shape=(1000,), chunks=(300,), dtype="int32")[...] = data
        with ZipStore(tmp_path / f"{method}.zip", mode="r") as store:
            np.testing.assert_array_equal(zarrcore.open_array(store)[...], data)
            whole = store.get("c/1")
            assert store.get("c/1", 5, 17) == whole[5:17] and store.get("c/1", -7) == whole[-7:]


@pytest.mark.parametrize("access", ["read", "partial write"])
def test_s3_object_far_larger_than_its_chunk_is_not_downloaded(s3_bucket, fault_proxy, access):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = s3_bucket
    url = f"s3://{bucket}/a"
    a = zarrcore.create_array(url, shape=(16,), chunks=(16,), dtype="uint8",
                              compressors=None, storage_options=server.storage_options())
    a.store.set("c/0", bytes(50 << 20))
    proxied = zarrcore.open_array(url, mode="r+", storage_options={
        **server.storage_options(fault_proxy.endpoint), "retries": 0})
    bound = size_with_slack(16)  # the 16 bytes of the chunk, with slack
    fault_proxy.answered = 0
    with pytest.raises(ValueTooLargeError, match=rf"'c/0'.* more than {bound} bytes"):
        if access == "read":
            proxied[...]
        else:
            proxied[3:5] = 7  # a read-modify-write (conditional on S3)
    assert fault_proxy.answered < bound + 1 + 4096  # the body asked for, and headers


def test_s3_metadata_document_beyond_the_limit_is_not_downloaded(s3_bucket, fault_proxy):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    store.set("big/zarr.json", b" " * (20 << 20) + ARRAY_JSON)  # valid JSON, 20 MiB
    proxied = make_store(f"s3://{bucket}", storage_options={
        **server.storage_options(fault_proxy.endpoint), "retries": 0})
    zarrcore.config.set(max_chunk_bytes=1 << 20)
    limit = size_with_slack(1 << 20)
    with pytest.raises(ValueTooLargeError, match=rf"'big/zarr.json'.* more than {limit} bytes"):
        zarrcore.open_array(proxied, path="big", mode="r")
    assert fault_proxy.answered < limit + 1 + 4096


def test_shard_index_entry_larger_than_a_valid_inner_chunk_is_not_fetched():
    from zarrcore.codecs.sharding import ShardingCodec
    from zarrcore.errors import ShardIndexError
    from _remote_stores import DelayedStore

    store = DelayedStore()
    codec = ShardingCodec((4,), codecs=[{"name": "bytes"}],
                          index_codecs=[{"name": "bytes", "configuration": {"endian": "little"}}])
    a = zarrcore.create_array(store, shape=(64,), dtype="uint8", chunks=(64,), serializer=codec,
                              compressors=None)
    a[...] = np.arange(64, dtype="uint8")
    shard = bytearray(store.get("c/0"))
    struct.pack_into("<Q", shard, len(shard) - 16 + 8, 50 << 20)  # the last inner chunk's nbytes
    store.set("c/0", bytes(shard))
    store.reset()
    with pytest.raises(ShardIndexError, match=rf"\(15,\).*nbytes {50 << 20}.*more than the "
                                              rf"{size_with_slack(4)} bytes"):
        a[60:]
    assert all(stop - start <= 16 * 16 for _, _, ranges in store.requests
               for start, stop in ranges or [] if start is not None and start >= 0)


@pytest.fixture
def plain_http_server(tmp_path):
    """An HTTP server of `tmp_path` without byte ranges (Python's http.server)."""
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, tmp_path
    server.shutdown()
    server.server_close()


def test_http_server_without_byte_ranges(plain_http_server):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, root = plain_http_server
    data = np.arange(100, dtype="uint8")
    zarrcore.create_array(str(root / "a"), shape=(100,), chunks=(30,), dtype="uint8")[...] = data
    url = f"http://127.0.0.1:{server.server_address[1]}/a"
    np.testing.assert_array_equal(zarrcore.open_array(url, mode="r")[...], data)
    (root / "a" / "c" / "0").write_bytes(bytes(1 << 20))
    with pytest.raises(ValueTooLargeError, match=r"'c/0'"):
        zarrcore.open_array(url, mode="r")[...]


@pytest.mark.parametrize("url, option", [
    ("s3://bucket/a", "aws_web_identity_token_file"),
    ("s3://bucket/a", "web_identity_token_file"),
    ("gs://bucket/a", "google_service_account"),
    ("gs://bucket/a", "application_credentials"),
    ("az://container/a", "azure_federated_token_file"),
    ("ftp://127.0.0.1/a", "application_credentials"),  # through fsspec
])
def test_credential_file_options_need_consent(url, option):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    options = {option: "/etc/hostname"}
    with pytest.raises(StoreURLError, match=rf"{option}.*local file.*allow_credential_files"):
        make_store(url, storage_options=options)
    if url.startswith("ftp"):
        return  # (fsspec's ftp would connect)
    try:  # consented: passed on (the client may then fail to use the file, but not refuse it)
        make_store(url, storage_options={**options, "allow_credential_files": True})
    except StoreURLError as e:
        assert "allow_credential_files" not in str(e)


def test_unknown_storage_options_are_refused():
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    with pytest.raises(StoreURLError, match=r"unknown option 'no_such_option'.*accepted: .*"
                                            r"access_key_id.*region"):
        make_store("s3://bucket/a", storage_options={"no_such_option": 1, "region": "x"})
    with pytest.raises(StoreURLError, match=r"unknown option 'region' for its http store"):
        make_store("https://example.com/a", storage_options={"region": "x"})
    # Documented names, prefixed or in capitals as obstore takes them, and s3fs' names pass.
    make_store("s3://bucket/a", storage_options={"AWS_REGION": "x", "aws_endpoint":
                                                 "http://127.0.0.1:9", "key": "k", "secret": "s"})
