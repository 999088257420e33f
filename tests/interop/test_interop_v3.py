"""Zarr v3 interoperability with zarr-python 3 and tensorstore, in both directions.

For every case, a peer writes an array and zarrcore reads it, and zarrcore writes and the peer
reads it. Values are compared exactly (floats by their bit patterns), and so are the metadata
that travel with the array: fill value, attributes, dimension names. Chunks that hold only the
fill value are not stored by any writer, so every case also checks that missing chunks read as
the fill value and that zarrcore writes exactly the chunks it must.
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np
import pytest

import zarrcore

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

PEERS = ["zarr", "tensorstore"]

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]

ARRAY_ARRAY = {"transpose"}
ARRAY_BYTES = {"bytes"}

NO_PAYLOAD = "zarr-python 3 reads and writes every NaN fill value as canonical 'NaN'"


def bytes_codec(endian="little"):
    return {"name": "bytes", "configuration": {"endian": endian}}


def cke(name="default", separator=None):
    if separator is None:
        return {"name": name}
    return {"name": name, "configuration": {"separator": separator}}


@dataclass
class Case:
    id: str
    dtype: str
    shape: tuple = (7, 5)
    chunks: tuple = (3, 2)
    fill: object = None  # as written in zarr.json; None: the data type's zero
    codecs: list = None  # v3 JSON; default: little-endian bytes only
    chunk_key_encoding: dict = None
    dimension_names: tuple = None
    attributes: dict = None
    skip: dict = field(default_factory=dict)  # peer -> reason it cannot take part

    def __post_init__(self):
        if self.codecs is None:
            self.codecs = [bytes_codec()]
        if self.fill is None:
            kind = np.dtype(self.dtype).kind
            self.fill = False if kind == "b" else [0.0, 0.0] if kind == "c" else 0

    @property
    def np_dtype(self):
        return np.dtype(self.dtype)

    @property
    def fill_np(self):
        return fill_from_json(self.np_dtype, self.fill)

    def split_codecs(self):
        aa = [c for c in self.codecs if c["name"] in ARRAY_ARRAY]
        ab = [c for c in self.codecs if c["name"] in ARRAY_BYTES]
        bb = [c for c in self.codecs if c["name"] not in ARRAY_ARRAY | ARRAY_BYTES]
        assert len(ab) == 1
        return aa, ab[0], bb


# -- fill values and values ---------------------------------------------------------------------
def _float_from_json(dtype, value):
    if isinstance(value, str):
        if value.startswith("0x"):
            bits = np.array(int(value, 16), dtype=f"u{dtype.itemsize}")
            return bits.view(dtype)[()]
        return dtype.type({"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}[value])
    return dtype.type(value)


def fill_from_json(dtype, value):
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        out = np.zeros((), dtype=dtype)
        out.real = _float_from_json(part, value[0])
        out.imag = _float_from_json(part, value[1])
        return out[()]
    if dtype.kind == "f":
        return _float_from_json(dtype, value)
    return np.array(value, dtype=dtype)[()]


def bits(a):
    """An integer view of `a` that tells apart every float bit pattern (NaN payloads, -0.0)."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.view(f"u{a.dtype.itemsize}")
    if a.dtype.kind == "c":
        return np.stack([bits(a.real), bits(a.imag)], axis=-1)
    return a


def assert_identical(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(bits(actual), bits(expected))


def make_data(case, seed=0):
    """Random values of every kind the dtype has; the first chunk holds only the fill value."""
    rng = np.random.default_rng(seed)
    dt, shape = case.np_dtype, case.shape
    if dt.kind == "b":
        data = rng.random(shape) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        data = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        if data.size >= 2:
            data.reshape(-1)[-2:] = [info.min, info.max]
    else:
        part = np.dtype(f"f{dt.itemsize}") if dt.kind == "f" else np.dtype(f"f{dt.itemsize // 2}")
        finfo = np.finfo(part)
        parts = []
        for k in range(1 if dt.kind == "f" else 2):
            x = np.asarray(rng.standard_normal(shape) * 1000).astype(part)
            flat = x.reshape(-1)
            flat[(1 + k)::7] = np.nan
            flat[(3 + k)::11] = np.inf
            flat[(5 + k)::13] = -np.inf
            flat[(2 + k)::17] = finfo.smallest_subnormal
            flat[(4 + k)::19] = finfo.max
            flat[(6 + k)::23] = -0.0
            # NaNs with payloads and sign bits must survive bit for bit.
            ubits = flat.view(f"u{part.itemsize}")
            nan_bits = int(np.array(np.nan, dtype=part).view(f"u{part.itemsize}"))
            sign = 1 << (8 * part.itemsize - 1)
            ubits[(8 + k)::29] = nan_bits | 1
            ubits[(9 + k)::31] = nan_bits | sign | 3
            parts.append(x)
        if dt.kind == "f":
            data = parts[0]
        else:
            # Build complex values part by part so no NaN/Inf arithmetic touches them.
            data = np.empty(shape, dtype=dt)
            data.real, data.imag = parts
    data = np.array(data, dtype=dt, order="C")
    if data.ndim and data.size:
        first_chunk = tuple(slice(0, c) for c in case.chunks)
        data[first_chunk] = case.fill_np
    elif data.ndim == 0 and (bits(data) == bits(np.asarray(case.fill_np))).all():
        data = np.asarray(~data if dt.kind == "b" else data + 1, dtype=dt)
    return data


def chunk_grid(case):
    return [range(-(-s // c)) for s, c in zip(case.shape, case.chunks)]


def chunk_key(case, coords):
    """The store key of a chunk, worked out here from the spec (not by any library)."""
    enc = case.chunk_key_encoding or {"name": "default"}
    name = enc["name"]
    sep = enc.get("configuration", {}).get("separator", "/" if name == "default" else ".")
    parts = [str(c) for c in coords]
    if name == "default":
        return sep.join(["c", *parts])
    return sep.join(parts) if parts else "0"


def expected_chunk_keys(case, data):
    """Keys of the chunks that hold anything but the fill value."""
    import itertools

    fill = bits(np.asarray(case.fill_np, dtype=case.np_dtype))
    keys = set()
    for coords in itertools.product(*chunk_grid(case)):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, case.chunks))
        if not (bits(data[region]) == fill).all():
            keys.add(chunk_key(case, coords))
    return keys


def stored_chunk_keys(root):
    keys = set()
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for f in files:
            if f != "zarr.json":
                keys.add(f if rel == "." else os.path.join(rel, f).replace(os.sep, "/"))
    return keys


# -- the writers and readers ---------------------------------------------------------------------
def zarrcore_write(path, case, data):
    aa, ab, bb = case.split_codecs()
    a = zarrcore.create_array(
        str(path), shape=case.shape, dtype=case.dtype, chunks=case.chunks, filters=aa,
        serializer=ab, compressors=bb, fill_value=case.fill_np,
        chunk_key_encoding=case.chunk_key_encoding, dimension_names=case.dimension_names,
        attributes=case.attributes,
    )
    if data is not None:
        a[...] = data
    return a


def zarrcore_read(path):
    a = zarrcore.open_array(str(path), mode="r")
    return a, np.asarray(a[...])


def zarr_write(path, case, data):
    aa, ab, bb = case.split_codecs()
    z = zarr.create_array(
        store=str(path), shape=case.shape, dtype=case.dtype, chunks=case.chunks, filters=aa,
        serializer=ab, compressors=bb, fill_value=case.fill_np,
        chunk_key_encoding=case.chunk_key_encoding or {"name": "default"},
        dimension_names=case.dimension_names, attributes=case.attributes, zarr_format=3,
    )
    if data is not None:
        z[...] = data


def zarr_read(path):
    z = zarr.open_array(str(path), mode="r")
    return z, np.asarray(z[...])


def ts_metadata(case):
    md = {
        "shape": list(case.shape),
        "data_type": case.dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(case.chunks)}},
        "fill_value": case.fill,
        "codecs": case.codecs,
    }
    if case.chunk_key_encoding is not None:
        md["chunk_key_encoding"] = case.chunk_key_encoding
    if case.dimension_names is not None:
        md["dimension_names"] = list(case.dimension_names)
    if case.attributes is not None:
        md["attributes"] = case.attributes
    return md


def ts_spec(path):
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}


def ts_write(path, case, data):
    t = ts.open({**ts_spec(path), "metadata": ts_metadata(case)}, create=True).result()
    if data is not None:
        t.write(data).result()


def ts_read(path):
    t = ts.open(ts_spec(path), open=True, read=True).result()
    return t, np.asarray(t.read().result())


WRITERS = {"zarr": zarr_write, "tensorstore": ts_write}
READERS = {"zarr": zarr_read, "tensorstore": ts_read}


# -- the cases ----------------------------------------------------------------------------------
def _cases():
    cases = []
    # Every data type, in both byte orders, with edge chunks on both axes.
    for dt in DTYPES:
        cases.append(Case(f"dtype-{dt}-le", dt))
        if np.dtype(dt).itemsize > 1:
            cases.append(Case(f"dtype-{dt}-be", dt, codecs=[bytes_codec("big")]))
        else:
            cases.append(Case(f"dtype-{dt}-noendian", dt, codecs=[{"name": "bytes"}]))
    # Fill values: NaN, infinities, a custom NaN payload, extremes, complex pairs.
    fills = [
        ("float16", "NaN"), ("float32", "NaN"), ("float64", "NaN"),
        ("float16", "Infinity"), ("float32", "-Infinity"), ("float64", "Infinity"),
        ("float64", 1.5e300), ("float32", -2.5), ("float16", 0.125),
        ("int8", -128), ("int16", -7), ("int64", -(2 ** 63)), ("uint64", 2 ** 64 - 1),
        ("uint8", 255), ("bool", True),
        ("complex64", ["NaN", "Infinity"]), ("complex128", [1.5, "-Infinity"]),
        ("complex128", [-0.25, 3.0]),
    ]
    for dt, fill in fills:
        cases.append(Case(f"fill-{dt}-{json.dumps(fill)}".replace('"', "").replace(" ", ""), dt,
                          fill=fill))
    for dt, fill in [("float16", "0x7e01"), ("float32", "0x7fc00001"),
                     ("float64", "0x7ff8000000000001"), ("float32", "0xffc00000"),
                     ("float64", "0x7ff0000000000001")]:
        cases.append(Case(f"fill-payload-{dt}-{fill}", dt, fill=fill, skip={"zarr": NO_PAYLOAD}))
    # Chunk key encodings, 3-d so both separators appear twice.
    encodings = {
        "default-slash": cke("default", "/"), "default-dot": cke("default", "."),
        "default-implicit": cke("default"), "v2-dot": cke("v2", "."), "v2-slash": cke("v2", "/"),
        "v2-implicit": cke("v2"),
    }
    for name, enc in encodings.items():
        cases.append(Case(f"cke-{name}", "int32", shape=(5, 4, 3), chunks=(2, 3, 2),
                          chunk_key_encoding=enc))
        cases.append(Case(f"zerod-{name}", "float64", shape=(), chunks=(), fill=1.5,
                          chunk_key_encoding=enc))
    cases.append(Case("zerod-bool", "bool", shape=(), chunks=()))
    cases.append(Case("zerod-complex64-be", "complex64", shape=(), chunks=(),
                      codecs=[bytes_codec("big"), {"name": "crc32c"}]))
    # Chunks larger than the array; 1-d; 4-d; an empty array.
    cases.append(Case("bigger-chunks", "uint16", shape=(3, 4), chunks=(5, 9)))
    cases.append(Case("1d", "float32", shape=(23,), chunks=(4,), fill="NaN"))
    cases.append(Case("4d", "int16", shape=(3, 4, 2, 5), chunks=(2, 3, 1, 2)))
    cases.append(Case("empty-axis", "int32", shape=(0, 5), chunks=(3, 2)))
    # Attributes and dimension names.
    attrs = {"units": "K", "scale": 0.5, "nested": {"list": [1, "two", None, True]},
             "unicode": "température ☃", "empty": {}}
    cases.append(Case("attrs", "float32", attributes=attrs))
    cases.append(Case("dimension-names", "int8", dimension_names=("y", "x"),
                      attributes={"a": 1}))
    cases.append(Case("dimension-names-null", "int8", dimension_names=("y", None)))
    # Codecs.
    zstd = lambda level, checksum: {"name": "zstd",  # noqa: E731
                                    "configuration": {"level": level, "checksum": checksum}}
    gzip = lambda level: {"name": "gzip", "configuration": {"level": level}}  # noqa: E731
    crc = {"name": "crc32c"}
    transpose = lambda *order: {"name": "transpose",  # noqa: E731
                                "configuration": {"order": list(order)}}
    codec_cases = {
        "transpose-2d": [transpose(1, 0), bytes_codec()],
        "gzip-1": [bytes_codec(), gzip(1)],
        "gzip-9": [bytes_codec("big"), gzip(9)],
        "zstd-1": [bytes_codec(), zstd(1, False)],
        "zstd-checksum": [bytes_codec(), zstd(3, True)],
        "zstd-0-checksum-be": [bytes_codec("big"), zstd(0, True)],
        "zstd-negative-level": [bytes_codec(), zstd(-3, False)],
        "crc32c": [bytes_codec(), crc],
        "crc32c-be": [bytes_codec("big"), crc],
        "chain-transpose-be-gzip-crc": [transpose(1, 0), bytes_codec("big"), gzip(4), crc],
        "chain-zstd-gzip": [bytes_codec(), zstd(1, True), gzip(2)],
        "chain-blosc-crc-crc": [bytes_codec(), {"name": "blosc", "configuration": {
            "cname": "zstd", "clevel": 3, "shuffle": "shuffle"}}, crc, crc],
    }
    for name, codecs in codec_cases.items():
        cases.append(Case(f"codec-{name}", "float32", codecs=codecs))
    cases.append(Case("codec-transpose-3d", "int16", shape=(5, 4, 3), chunks=(2, 3, 2),
                      codecs=[transpose(2, 0, 1), bytes_codec("big"), zstd(1, False)]))
    cases.append(Case("codec-transpose-transpose", "uint32", shape=(5, 4, 3), chunks=(4, 3, 2),
                      codecs=[transpose(1, 2, 0), transpose(2, 0, 1), bytes_codec(), crc]))
    cases.append(Case("codec-complex-chain", "complex128",
                      codecs=[transpose(1, 0), bytes_codec("big"), zstd(2, True), crc]))
    for cname in ("lz4", "lz4hc", "blosclz", "zstd", "zlib"):
        for shuffle in ("noshuffle", "shuffle", "bitshuffle"):
            blosc = {"name": "blosc", "configuration": {"cname": cname, "clevel": 5,
                                                        "shuffle": shuffle}}
            cases.append(Case(f"blosc-{cname}-{shuffle}", "uint16", shape=(40, 9),
                              chunks=(16, 4), codecs=[bytes_codec(), blosc]))
    cases.append(Case("blosc-typesize-blocksize-f64", "float64", codecs=[bytes_codec(), {
        "name": "blosc", "configuration": {"cname": "lz4", "clevel": 9, "shuffle": "shuffle",
                                           "typesize": 8, "blocksize": 0}}]))
    cases.append(Case("blosc-clevel0-bool", "bool", codecs=[{"name": "bytes"}, {
        "name": "blosc", "configuration": {"cname": "blosclz", "clevel": 0,
                                           "shuffle": "bitshuffle"}}]))
    return cases


CASES = _cases()
assert len({c.id for c in CASES}) == len(CASES)


def _params():
    out = []
    for case in CASES:
        for peer in PEERS:
            marks = [pytest.mark.skip(reason=case.skip[peer])] if peer in case.skip else []
            out.append(pytest.param(case, peer, id=f"{case.id}-{peer}", marks=marks))
    return out


PARAMS = _params()


def check_zarrcore_metadata(a, case):
    assert a.shape == case.shape
    assert a.chunks == case.chunks
    assert a.dtype == case.np_dtype
    assert_identical(np.asarray(a.fill_value, dtype=case.np_dtype), np.asarray(case.fill_np))
    assert dict(a.attrs) == (case.attributes or {})
    names = a.metadata.dimension_names
    if case.dimension_names is None:
        assert names is None or all(n in (None, "") for n in names)
    else:
        # tensorstore writes a missing name as "" rather than null.
        assert [n or None for n in names] == [n or None for n in case.dimension_names]


# -- peer writes, zarrcore reads ----------------------------------------------------------------
@pytest.mark.parametrize("case,peer", PARAMS)
def test_peer_writes_zarrcore_reads(tmp_path, case, peer):
    data = make_data(case)
    WRITERS[peer](tmp_path / "a", case, data)
    a, got = zarrcore_read(tmp_path / "a")
    assert_identical(got, data)
    check_zarrcore_metadata(a, case)
    assert a.read_only


# -- zarrcore writes, peer reads ----------------------------------------------------------------
@pytest.mark.parametrize("case,peer", PARAMS)
def test_zarrcore_writes_peer_reads(tmp_path, case, peer):
    data = make_data(case)
    zarrcore_write(tmp_path / "a", case, data)
    # Exactly the chunks holding anything but the fill value were written.
    assert stored_chunk_keys(tmp_path / "a") == expected_chunk_keys(case, data)
    node, got = READERS[peer](tmp_path / "a")
    assert_identical(got, data)
    if peer == "zarr":
        assert dict(node.attrs) == (case.attributes or {})
        assert node.metadata.chunk_grid.chunk_shape == case.chunks
        assert_identical(np.asarray(node.metadata.fill_value, dtype=case.np_dtype),
                         np.asarray(case.fill_np))
        if case.dimension_names is not None:
            assert tuple(node.metadata.dimension_names) == tuple(case.dimension_names)
        else:
            assert node.metadata.dimension_names is None
    else:
        assert_identical(np.asarray(node.fill_value), np.asarray(case.fill_np))
        if case.shape:  # tensorstore reports no chunk shape for rank 0
            assert tuple(node.chunk_layout.read_chunk.shape) == case.chunks
        labels = list(node.domain.labels)
        assert labels == [n or "" for n in (case.dimension_names or [""] * len(case.shape))]
        if case.attributes is not None:
            assert node.spec().to_json()["metadata"].get("attributes") == case.attributes


# -- missing chunks read as the fill value, both ways --------------------------------------------
SPARSE_CASES = [c for c in CASES if c.id in (
    "fill-float32-NaN", "fill-complex64-[NaN,Infinity]", "fill-int16--7",
    "fill-payload-float32-0x7fc00001", "cke-v2-dot", "codec-chain-transpose-be-gzip-crc",
    "blosc-lz4-bitshuffle", "zerod-default-implicit", "fill-bool-true",
)]
assert len(SPARSE_CASES) == 9


def _sparse_write_region(case):
    """A selection touching a single interior element, or nothing for 0-d arrays."""
    return tuple(s - 1 for s in case.shape)


def _sparse_expected(case, value):
    expected = np.full(case.shape, case.fill_np, dtype=case.np_dtype)
    if case.shape:
        expected[_sparse_write_region(case)] = value
    return expected


def _non_fill_value(case):
    dt = case.np_dtype
    if dt.kind == "b":
        return np.array(not case.fill_np, dtype=dt)[()]
    return np.array(3, dtype=dt)[()]


@pytest.mark.parametrize("case,peer", [p for p in PARAMS if p.values[0] in SPARSE_CASES])
def test_missing_chunks_read_as_fill(tmp_path, case, peer):
    value = _non_fill_value(case)
    expected = _sparse_expected(case, value)
    # Peer creates and writes one element: zarrcore sees fill everywhere else.
    if peer == "zarr":
        zarr_write(tmp_path / "p", case, None)
        if case.shape:
            zarr.open_array(str(tmp_path / "p"), mode="r+")[_sparse_write_region(case)] = value
    else:
        ts_write(tmp_path / "p", case, None)
        if case.shape:
            t = ts.open(ts_spec(tmp_path / "p"), open=True).result()
            t[_sparse_write_region(case)].write(value).result()
    assert_identical(zarrcore_read(tmp_path / "p")[1], expected)
    # zarrcore creates and writes one element: the peer sees fill everywhere else.
    a = zarrcore_write(tmp_path / "z", case, None)
    if case.shape:
        a[_sparse_write_region(case)] = value
        assert stored_chunk_keys(tmp_path / "z") == {
            chunk_key(case, [i // c for i, c in zip(_sparse_write_region(case), case.chunks)])}
    else:
        assert stored_chunk_keys(tmp_path / "z") == set()
    assert_identical(READERS[peer](tmp_path / "z")[1], expected)


# -- all-fill chunks ----------------------------------------------------------------------------
@pytest.mark.parametrize("fill", [0, 7, "NaN"])
def test_zarrcore_skips_all_fill_chunks(tmp_path, fill):
    case = Case("skip", "float32", shape=(6, 6), chunks=(3, 3), fill=fill,
                codecs=[bytes_codec(), {"name": "zstd", "configuration": {"level": 1}}])
    fv = case.fill_np
    a = zarrcore_write(tmp_path / "a", case, None)
    a[...] = fv
    assert stored_chunk_keys(tmp_path / "a") == set()
    a[...] = np.arange(36, dtype="f4").reshape(6, 6) + 100
    assert len(stored_chunk_keys(tmp_path / "a")) == 4
    # Overwriting a stored chunk with fill removes its key; a partial write that leaves a chunk
    # all-fill does so too.
    a[:3, :3] = fv
    a[3:, 3:5] = fv
    a[3:, 5] = fv
    assert stored_chunk_keys(tmp_path / "a") == {"c/0/1", "c/1/0"}
    expected = np.arange(36, dtype="f4").reshape(6, 6) + 100
    expected[:3, :3] = fv
    expected[3:, 3:] = fv
    for peer in PEERS:
        assert_identical(READERS[peer](tmp_path / "a")[1], expected)


# -- byte-identical chunks where the codecs are deterministic ----------------------------------
DETERMINISTIC = [c for c in CASES if all(
    codec["name"] in ("bytes", "transpose", "crc32c") for codec in c.codecs)]


@pytest.mark.parametrize("case", DETERMINISTIC, ids=[c.id for c in DETERMINISTIC])
def test_chunk_bytes_match_zarr_python(tmp_path, case):
    if "zarr" in case.skip:
        pytest.skip(case.skip["zarr"])
    data = make_data(case)
    zarrcore_write(tmp_path / "mine", case, data)
    zarr_write(tmp_path / "theirs", case, data)
    keys = stored_chunk_keys(tmp_path / "mine")
    assert keys == stored_chunk_keys(tmp_path / "theirs")
    for key in keys:
        mine = (tmp_path / "mine" / key).read_bytes()
        theirs = (tmp_path / "theirs" / key).read_bytes()
        assert mine == theirs, key


def test_zarrcore_metadata_document_is_valid_for_peers(tmp_path):
    """The zarr.json zarrcore writes carries the fields the spec requires, in their JSON forms."""
    case = Case("doc", "float32", fill="NaN", chunk_key_encoding=cke("v2", "/"),
                dimension_names=("t", None), attributes={"k": [1, 2]},
                codecs=[bytes_codec("big"), {"name": "crc32c"}])
    zarrcore_write(tmp_path / "a", case, None)
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert doc["zarr_format"] == 3 and doc["node_type"] == "array"
    assert doc["shape"] == [7, 5] and doc["data_type"] == "float32"
    assert doc["chunk_grid"] == {"name": "regular", "configuration": {"chunk_shape": [3, 2]}}
    assert doc["chunk_key_encoding"]["name"] == "v2"
    assert doc["chunk_key_encoding"].get("configuration", {}).get("separator") == "/"
    assert doc["fill_value"] == "NaN"
    assert doc["dimension_names"] == ["t", None]
    assert doc["attributes"] == {"k": [1, 2]}
    assert [c["name"] for c in doc["codecs"]] == ["bytes", "crc32c"]
    assert doc["codecs"][0]["configuration"]["endian"] == "big"


@pytest.mark.parametrize("fill,expected", [
    ("0x7fc00001", "0x7fc00001"), ("NaN", "NaN"), ("Infinity", "Infinity"),
    ("-Infinity", "-Infinity"), (-0.0, -0.0),
])
def test_zarrcore_fill_value_json(tmp_path, fill, expected):
    case = Case("f", "float32", fill=fill)
    zarrcore_write(tmp_path / "a", case, None)
    stored = json.loads((tmp_path / "a" / "zarr.json").read_text())["fill_value"]
    assert stored == expected
    if isinstance(expected, float):
        assert np.signbit(stored) == np.signbit(expected)
    a = zarrcore.open_array(str(tmp_path / "a"), mode="r")
    assert_identical(np.asarray(a.fill_value, dtype="f4"), np.asarray(case.fill_np))
    assert_identical(a[0, 0], np.asarray(case.fill_np))


# -- hierarchies ---------------------------------------------------------------------------------
def _peer_hierarchy(root):
    g = zarr.create_group(store=str(root), attributes={"title": "root"})
    g.create_array("x", shape=(4,), dtype="int32", chunks=(2,))[...] = np.arange(4)
    a = g.create_group("a", attributes={"level": 1})
    a.create_array("y", shape=(3, 2), dtype="float64", chunks=(2, 2),
                   attributes={"units": "m"})[...] = np.arange(6.0).reshape(3, 2)
    b = a.create_group("b")
    b.create_array("z", shape=(), dtype="bool", chunks=())[...] = True
    b.create_group("c", attributes={"deep": True}).create_group("d")
    g.create_group("empty")


EXPECTED_TREE = {
    "x": "array", "a": "group", "a/y": "array", "a/b": "group", "a/b/z": "array",
    "a/b/c": "group", "a/b/c/d": "group", "empty": "group",
}


def _kind(node):
    return "array" if isinstance(node, zarrcore.Array) else "group"


def test_zarr_python_hierarchy_seen_by_zarrcore(tmp_path):
    _peer_hierarchy(tmp_path / "h")
    g = zarrcore.open_group(str(tmp_path / "h"), mode="r")
    assert dict(g.attrs) == {"title": "root"}
    members = {path: _kind(node) for path, node in g.members(max_depth=None)}
    assert members == EXPECTED_TREE
    assert {p: _kind(n) for p, n in g.members(max_depth=0)} == {
        "x": "array", "a": "group", "empty": "group"}
    assert {p: _kind(n) for p, n in g.members(max_depth=1)} == {
        "x": "array", "a": "group", "empty": "group", "a/y": "array", "a/b": "group"}
    assert sorted(g.keys()) == ["a", "empty", "x"]
    assert [n for n, _ in g.arrays()] == ["x"]
    assert sorted(n for n, _ in g.groups()) == ["a", "empty"]
    assert "a/b/c/d" in g and "a/b/z" in g and "nope" not in g
    np.testing.assert_array_equal(g["x"][...], np.arange(4, dtype="i4"))
    np.testing.assert_array_equal(g["a/y"][...], np.arange(6.0).reshape(3, 2))
    assert g["a"]["y"].attrs["units"] == "m"
    assert g["a/b/z"][...] == np.True_
    assert dict(g["a/b/c"].attrs) == {"deep": True}
    assert g["a/b/c/d"].path == "a/b/c/d"
    tree = g.tree()
    indent = {}
    for line in tree.splitlines()[1:]:
        label = line.lstrip("│├└─  ")
        indent[label.split()[0]] = len(line) - len(label)
    assert set(indent) == {"x", "a", "y", "b", "z", "c", "d", "empty"}
    assert indent["x"] == indent["a"] == indent["empty"] < indent["y"] == indent["b"]
    assert indent["b"] < indent["z"] == indent["c"] < indent["d"]


def test_zarrcore_hierarchy_opened_by_zarr_python(tmp_path):
    root = tmp_path / "h"
    g = zarrcore.open_group(str(root), mode="w", attributes={"title": "root"})
    g.create_array("x", shape=(4,), dtype="int32", chunks=(2,))[...] = np.arange(4)
    a = g.create_group("a", attributes={"level": 1})
    a.create_array("y", shape=(3, 2), dtype="float64", chunks=(2, 2),
                   attributes={"units": "m"})[...] = np.arange(6.0).reshape(3, 2)
    b = a.require_group("b")
    b.create_array("z", shape=(), dtype="bool", chunks=())[...] = True
    b.create_group("c", attributes={"deep": True}).create_group("d")
    g.create_group("empty")

    zg = zarr.open_group(str(root), mode="r")
    assert dict(zg.attrs) == {"title": "root"}
    members = {p: ("array" if isinstance(n, zarr.Array) else "group")
               for p, n in zg.members(max_depth=None)}
    assert members == EXPECTED_TREE
    np.testing.assert_array_equal(zg["x"][...], np.arange(4, dtype="i4"))
    np.testing.assert_array_equal(zg["a/y"][...], np.arange(6.0).reshape(3, 2))
    assert dict(zg["a/y"].attrs) == {"units": "m"}
    assert dict(zg["a"].attrs) == {"level": 1}
    assert bool(zg["a/b/z"][...]) is True
    assert dict(zg["a/b/c"].attrs) == {"deep": True}
    # Every node opens on its own, too.
    for path, kind in EXPECTED_TREE.items():
        node = zarr.open(str(root / path), mode="r")
        assert isinstance(node, zarr.Array if kind == "array" else zarr.Group), path
        # ...and with tensorstore when it is an array.
        if kind == "array":
            got = ts.open(ts_spec(root / path), open=True).result().read().result()
            assert_identical(got, np.asarray(zarrcore.open_array(str(root), path=path)[...]))


def test_implicit_parent_groups_are_peer_groups(tmp_path):
    root = tmp_path / "h"
    zarrcore.create_array(str(root), name="p/q/r", shape=(2,), dtype="uint8", chunks=(2,))
    zg = zarr.open_group(str(root), mode="r")
    assert isinstance(zg["p"], zarr.Group)
    assert isinstance(zg["p/q"], zarr.Group)
    assert isinstance(zg["p/q/r"], zarr.Array)
    for path in ("", "p", "p/q"):
        doc = json.loads((root / path / "zarr.json").read_text())
        assert doc["node_type"] == "group" and doc["zarr_format"] == 3


def test_peer_group_attributes_updates_round_trip(tmp_path):
    root = tmp_path / "h"
    zarr.create_group(store=str(root), attributes={"a": 1})
    g = zarrcore.open_group(str(root), mode="r+")
    g.attrs["b"] = [1, 2]
    g.attrs["a"] = {"x": None}
    assert dict(zarr.open_group(str(root), mode="r").attrs) == {"a": {"x": None}, "b": [1, 2]}
    zarr.open_group(str(root), mode="r+").attrs["c"] = "peer"
    assert dict(zarrcore.open_group(str(root), mode="r").attrs) == {
        "a": {"x": None}, "b": [1, 2], "c": "peer"}


def test_read_modify_write_of_peer_array(tmp_path):
    """zarrcore updates part of an array a peer wrote; the peer sees both writers' values."""
    case = Case("rmw", "int32", shape=(9, 7), chunks=(4, 3), fill=-1,
                codecs=[bytes_codec("big"), {"name": "gzip", "configuration": {"level": 1}}])
    data = make_data(case)
    ts_write(tmp_path / "a", case, data)
    a = zarrcore.open_array(str(tmp_path / "a"), mode="r+")
    a[2:7:2, 1:-1] = 5
    data[2:7:2, 1:-1] = 5
    a[0] = -1
    data[0] = -1
    for peer in PEERS:
        assert_identical(READERS[peer](tmp_path / "a")[1], data)
