#!/usr/bin/env python3
"""One chunk encoded and decoded: zarrcore's `encode_chunk`/`decode_chunk` against the codec
floor (the compression library alone on the same bytes), zarr-python 3.4's codec pipeline
(`encode`/`decode` of one chunk) and zarrs-python (whole-chunk writes and reads of a local
array: it has no encode-only or decode-only call).

    python benchmarks/chunk_codec.py                          # every library importable
    python benchmarks/chunk_codec.py --calls 20 --rounds 1    # smoke test
    python benchmarks/chunk_codec.py --libs floor,zarrcore --codecs zstd
    valgrind --tool=callgrind --toggle-collect=map_next \\
        python benchmarks/chunk_codec.py --libs zarrcore --codecs zstd --calls 200 --rounds 1

A --side x --side float32 chunk (512 x 512: zarr-python #4243's case) of a smooth field
with noise, coded by each of --codecs (zstd level 1; blosc lz4 with byte shuffle; gzip
level 1). Per library and codec, --calls encodes (or decodes) of that one chunk run by `map`
(one C call per call of the loop; callgrind's --toggle-collect=map_next counts only them),
taking turns within each of --rounds rounds after a warm-up; the median µs per call over
the rounds, and its ratio to the floor's. The target (issue 52): zarrcore at most 1.1x the
floor.

  floor                 the library through zarrcore's thin GIL-free bindings (_compress)
  zarrcore              Array.encode_chunk(x) / Array.decode_chunk(b)
  zarrcore set/get      Array.set_chunk / get_chunk on a local array (zarrs' comparison)
  zarr-python           the array's codec pipeline: encode([(NDBuffer, spec)]) / decode(...)
  zarrs-python          zarr-python with the zarrs pipeline: a[chunk] = x / a[chunk], local

Libraries that do not import are left out (their line says why).
"""
import argparse
import collections
import os
import statistics
import tempfile
import time

import numpy as np

# name -> (zarrcore v3 compressors, zarr-python v3 compressors as JSON)
CODECS = {
    "zstd": [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
    "blosc-lz4": [{"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}],
    "gzip": [{"name": "gzip", "configuration": {"level": 1}}],
}


def chunk_data(side):
    y, x = np.mgrid[0:side, 0:side].astype("f4") / side
    noise = np.random.default_rng(0).standard_normal((side, side)).astype("f4") * 0.01
    return (np.sin(6 * x) * np.cos(4 * y) + noise).astype("f4")


def floor_calls(codec, data):
    """(encode, decode) of the library alone: zarrcore's bindings, the chunk's raw bytes."""
    from zarrcore._native import compress as _compress
    raw = memoryview(data).cast("B")
    out = np.empty_like(data)
    if codec == "zstd":
        enc = lambda: _compress.zstd_compress(raw, 1, False)  # noqa: E731
        dec = lambda b: _compress.zstd_decompress(b, out)  # noqa: E731
    elif codec == "blosc-lz4":
        enc = lambda: _compress.blosc_compress(raw, 4, 5, 1, "lz4", 0)  # noqa: E731
        dec = lambda b: _compress.blosc_decompress(b, out)  # noqa: E731
    else:
        enc = lambda: _compress.gzip_compress(raw, 1)  # noqa: E731
        dec = lambda b: _compress.gzip_decompress(b, out)  # noqa: E731
    return enc, dec, enc()


def zarrcore_calls(codec, data, root):
    import zarrcore
    a = zarrcore.create_array(zarrcore.MemoryStore(), shape=data.shape, chunks=data.shape,
                              dtype="f4", compressors=CODECS[codec], fill_value=0)
    encoded = a.encode_chunk(data)
    return (lambda: a.encode_chunk(data)), a.decode_chunk, encoded


def zarrcore_local_calls(codec, data, root):
    import zarrcore
    a = zarrcore.create_array(os.path.join(root, f"zarrcore-{codec}"), shape=data.shape,
                              chunks=data.shape, dtype="f4", compressors=CODECS[codec],
                              fill_value=0, overwrite=True)
    origin = (0,) * data.ndim
    a.set_chunk(origin, data)
    return (lambda: a.set_chunk(origin, data)), (lambda _: a.get_chunk(origin)), None


def zarr_python_calls(codec, data, root):
    import zarr
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync
    a = zarr.create_array(zarr.storage.MemoryStore(), shape=data.shape, chunks=data.shape,
                          dtype="f4", compressors=CODECS[codec], fill_value=0)
    aa = a._async_array
    proto = default_buffer_prototype()
    spec = ArraySpec(shape=data.shape, dtype=aa.metadata.dtype,
                     fill_value=aa.metadata.fill_value, config=aa.config, prototype=proto)
    pipeline = aa.codec_pipeline
    nd = proto.nd_buffer.from_numpy_array(data)

    def enc():
        return list(sync(pipeline.encode([(nd, spec)])))[0]

    def dec(b):
        return list(sync(pipeline.decode([(b, spec)])))[0].as_numpy_array()

    return enc, dec, enc()


def zarrs_calls(codec, data, root):
    import zarr
    import zarrs  # noqa: F401 (registers the pipeline)
    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
        a = zarr.create_array(os.path.join(root, f"zarrs-{codec}"), shape=data.shape,
                              chunks=data.shape, dtype="f4", compressors=CODECS[codec],
                              fill_value=0, overwrite=True)
    region = tuple(slice(0, n) for n in data.shape)
    a[region] = data

    def enc():
        a[region] = data

    return enc, (lambda _: a[region]), None


LIBS = {"floor": lambda codec, data, root: floor_calls(codec, data),
        "zarrcore": zarrcore_calls, "zarrcore set/get": zarrcore_local_calls,
        "zarr-python": zarr_python_calls, "zarrs-python": zarrs_calls}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--side", type=int, default=512)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--codecs", default=",".join(CODECS))
    p.add_argument("--root", default=None, help="where the local arrays go (a temp dir)")
    args = p.parse_args()
    data = chunk_data(args.side)
    root = args.root or tempfile.mkdtemp(prefix="chunk-codec-")
    print(f"chunk {data.shape} float32 ({data.nbytes >> 10} KiB); median µs per call over "
          f"{args.rounds} rounds of {args.calls}")
    for codec in args.codecs.split(","):
        funcs = {}
        for lib in args.libs.split(","):
            try:
                enc, dec, encoded = LIBS[lib](codec, data, root)
            except Exception as e:  # (a library not installed, or refusing the chain)
                print(f"{codec:10} {lib:17} left out: {type(e).__name__}: {e}"[:160])
                continue
            if encoded is not None:
                decoded = np.asarray(dec(encoded))
                assert np.array_equal(decoded, data), (lib, codec)
            funcs[f"{lib} encode"] = enc
            funcs[f"{lib} decode"] = (lambda d, b: lambda: d(b))(dec, encoded)
        per_call = {name: [] for name in funcs}
        for f in funcs.values():
            f()
        for _ in range(args.rounds):
            for name, f in funcs.items():
                t0 = time.perf_counter()
                collections.deque(map(lambda _, f=f: f(), range(args.calls)), 0)
                per_call[name].append((time.perf_counter() - t0) / args.calls * 1e6)
        floors = {kind: statistics.median(per_call[f"floor {kind}"])
                  for kind in ("encode", "decode") if f"floor {kind}" in per_call}
        for name, us in per_call.items():
            med = statistics.median(us)
            kind = name.rsplit(" ", 1)[1]
            ratio = f"{med / floors[kind]:5.2f}x floor" if kind in floors else ""
            print(f"{codec:10} {name:24} {med:9.1f} µs  (min {min(us):8.1f})  {ratio}")


if __name__ == "__main__":
    main()
