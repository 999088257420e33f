"""The public API used as a user would, for the type check of test_typing.py (mypy reads this
file; the test suite does not run it)."""
from __future__ import annotations

import numpy as np

import zarrcore
from zarrcore.errors import ZarrcoreError


def arrays(path: str) -> float:
    a: zarrcore.Array = zarrcore.create_array(
        path, name="t", shape=(100, 100), dtype="float32", chunks=(10, 10),
        attributes={"units": "K"})
    a[:, :] = np.ones((100, 100), dtype="float32")
    block: np.ndarray = a[0:10, :]
    shape: tuple[int, ...] = a.shape
    chunks: tuple[int, ...] = a.chunks
    shards: tuple[int, ...] | None = a.shards
    a.attrs["note"] = "x"
    a.update_attributes({"more": 1})
    a.resize((200, 100))
    new_shape: tuple[int, ...] = a.append(np.zeros((10, 100), dtype="float32"))
    for coords, region in a.iter_chunks():
        a[region] = a[region]
    points = a.vindex[np.array([0, 1]), np.array([2, 3])]
    a.oindex[[0, 1], :] = 0
    out = np.empty((10, 100), dtype="float32")
    a.get_orthogonal_selection((slice(0, 10), slice(None)), out=out)
    stored: int = a.nbytes_stored()
    print(a.info, a.info_complete(), block, shape, chunks, shards, new_shape, points, stored)
    return float(np.sum(a[...]))


def groups(store: dict[str, bytes]) -> list[str]:
    g: zarrcore.Group = zarrcore.open_group(store, mode="w")
    sub: zarrcore.Group = g.require_group("sub")
    sub.create_array("x", shape=(4,), dtype="int32")
    g["y"] = np.arange(3)
    z: zarrcore.Array = g.zeros(name="z", shape=(2, 2))
    node = g["sub/x"]
    if isinstance(node, zarrcore.Array):
        node[...] = 1
    names = [name for name, _ in g.members(max_depth=None)]
    print(g.tree(), g.nmembers(), z.dtype, list(g.array_values()))
    return names


def top_level(path: str) -> None:
    zarrcore.save(path, np.arange(5))
    loaded = zarrcore.load(path)
    node = zarrcore.open(path, mode="r")
    zarrcore.consolidate_metadata(path)
    group: zarrcore.Group = zarrcore.open_consolidated(path)
    with zarrcore.config.set(num_threads=2):
        threads: int = zarrcore.config.num_threads
    report = zarrcore.verify(path)
    ok: bool = report.ok
    copied = zarrcore.copy(path, path + ".copy", progress=False)
    converted = zarrcore.convert(path, path + ".v2", zarr_format=2, progress=False)
    print(loaded, node, group, threads, ok, copied.keys, converted)
    try:
        zarrcore.open_array(path, mode="r", path="missing")
    except ZarrcoreError as e:
        print(e)
