"""One model checker for every face of the API.

A hypothesis state machine keeps a numpy array (with the array's attributes) as the model of
one stored array, and drives random interleavings of every way to read and write it: `Array`
selections of each kind, `resize` and `append`, `AsyncArray` tasks and read and write futures
cancelled at random points, lazy views made before and used after resizes, chunk-level reads
and writes, handles with an in-process and a shared cache, handles opened afresh (which learn
what was stored before they write), pickled handles, and, for an array made in a group, the
handle the group gives, other processes writing (one killed at a random moment), and Ray Data
datasets read and written by tasks on a local Ray cluster (`zarrcore.ray`; a write task's
worker killed at a random moment, Ray retrying it), and Cubed computations reading and writing
it through zarr-python with zarrcore's codec pipeline (where Cubed installs: Python 3.12 and
later); over a memory store, a directory, a zip file and the loopback S3 server. After every
step every handle reads the model.

What it checks are the sentences (G1)-(G8) of docs/guide/guarantees.md, each cited where it
is checked (a test below keeps the two lists equal). Its budget in `make test` is small;
`make model-check` runs it longer (ZARRCORE_MODEL_SCALE=N multiplies the examples and
steps). Every new face of the API joins it as a rule.
"""
import asyncio
import concurrent.futures
import contextlib
import itertools
import multiprocessing
import os
import json
import pickle
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, invariant, precondition, rule,
    run_state_machine_as_test,
)

import zarrcore
from zarrcore.errors import ViewOutsideArrayError

from counting_store import CountingStore
from model_child import region_value, write_region

SCALE = int(os.environ.get("ZARRCORE_MODEL_SCALE", "1"))
FILL = -1
MAX_SIDE = 24
# (examples, steps) per store in `make test`: the S3 server answers a request in milliseconds.
BUDGET = {"memory": (25, 30), "directory": (15, 30), "zip": (10, 25), "s3": (3, 15),
          "cubed": (4, 15)}
# How long a cancelled call runs before it is cancelled: not started, starting, and on.
CANCEL_AFTER = (0.0, 0.0001, 0.0005, 0.002, 0.006)
SHARED_CACHE = sys.platform.startswith("linux")
# Ray steps an example (a Ray Data job costs about a second here; a killed worker more).
RAY_STEPS = 1
# Cubed steps an example, and the pipeline Cubed's zarr-python runs.
CUBED_STEPS = 3
PIPELINE = "zarrcore.zarr_pipeline.ZarrcorePipeline"
SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support")


class Place:
    """Where each example's array lives: a new one per example, on one kind of store."""

    def __init__(self, kind, root, s3=None):
        self.kind, self.root, self.s3 = kind, root, s3
        self._count = itertools.count()

    def new(self):
        """(store or URL for create_array and open_array, storage options, the address a
        second process opens, or None where no other process can)."""
        n = next(self._count)
        if self.kind == "memory":
            return CountingStore(), None, None
        if self.kind == "directory":
            path = os.path.join(self.root, f"a{n}.zarr")
            return path, None, (path, None)
        if self.kind == "zip":
            # (one process writes a zip at a time: no second process)
            return zarrcore.ZipStore(os.path.join(self.root, f"a{n}.zip"), mode="w"), None, None
        server, bucket = self.s3
        url, options = f"s3://{bucket}/a{n}.zarr", server.storage_options()
        return url, options, (url, options)


# -- selections drawn for the model's current shape --------------------------------------
def _slice(draw, n):
    start = draw(st.integers(0, n))
    stop = draw(st.integers(start, n))
    step = draw(st.sampled_from([1, 1, 2, 3]))
    return slice(start, stop, step)


def _points(draw, n, unique):
    points = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6, unique=unique))
    return np.array(points, dtype=np.intp)


def draw_selection(draw, shape, writing):
    """(kind, selection) of a non-empty array `shape`: what the Array call of that kind
    takes, and its numpy equivalent is `numpy_key`."""
    kind = draw(st.sampled_from(["basic", "orthogonal", "coordinate", "mask", "block"]))
    if kind == "basic":
        key = tuple(draw(st.integers(0, n - 1)) if draw(st.booleans()) and n else _slice(draw, n)
                    for n in shape)
        return kind, key
    if kind == "orthogonal":
        return kind, tuple(np.unique(_points(draw, n, True)) if draw(st.booleans())
                           else _slice(draw, n) for n in shape)
    if kind == "coordinate":
        size = int(np.prod(shape))
        npoints = draw(st.integers(1, min(6, size)))
        flat = draw(st.lists(st.integers(0, size - 1), min_size=npoints, max_size=npoints,
                             unique=writing))  # (a point written once)
        return kind, np.unravel_index(np.array(flat, dtype=np.intp), shape)
    if kind == "mask":
        seed = draw(st.integers(0, 2**32 - 1))
        return kind, np.random.default_rng(seed).random(shape) < 0.4
    return kind, None  # (block: drawn by the caller, which knows the chunks)


def numpy_key(kind, selection):
    if kind == "orthogonal":
        return np.ix_(*[np.arange(s.start, s.stop, s.step) if isinstance(s, slice) else s
                        for s in selection])
    return selection


class ArrayModel(RuleBasedStateMachine):
    """The state machine: `place` says where each example's array lives."""

    place: Place
    pool: concurrent.futures.Executor | None
    ray: object | None  # (the ray module, its local cluster started; None: no Ray steps)
    cubed: object | None  # (a CubedRun; None: no Cubed steps)

    # -- the array, its model and its handles -------------------------------------------
    @initialize(data=st.data())
    def create(self, data):
        d = data.draw
        kind = self.place.kind
        shape = tuple(d(st.integers(1, 16)) for _ in range(2))
        chunks = tuple(d(st.integers(2, 5)) for _ in shape)
        sharded = d(st.booleans())
        shards = tuple(c * d(st.integers(1, 3)) for c in chunks) if sharded else None
        zarr_format = 3 if sharded else d(st.sampled_from([2, 3]))
        self.store, self.options, self.address = self.place.new()
        # (a zip's members cannot be deleted: chunks of fill are stored too)
        self.config = {"write_empty_chunks": True} if kind == "zip" else None
        spec = dict(shape=shape, chunks=chunks, shards=shards, dtype="i4", fill_value=FILL,
                    zarr_format=zarr_format, config=self.config,
                    compressors=[{"name": "zstd"}] if zarr_format == 3 else None)
        # The array at the store's root, or made by a group as its member "x".
        self.group, self.path = None, None
        if d(st.booleans()):
            self.group = zarrcore.open_group(self.store, mode="w", zarr_format=zarr_format,
                                             storage_options=self.options)
            self.array, self.path = self.group.create_array("x", **spec), "x"
            if self.address is not None:
                self.address = (f"{self.address[0]}/x", self.address[1])
        else:
            self.array = zarrcore.create_array(self.store, storage_options=self.options, **spec)
        self.objects = shards or chunks  # what a write stores whole
        self.model = np.full(shape, FILL, dtype="i4")
        self.attrs = {}
        self.views = []
        self.killed = False  # (one killed writer an example: a process costs a moment)
        self.ray_steps = self.cubed_steps = 0
        self._open_handles()

    def _open(self, opener=zarrcore.open_array, **kwargs):
        return opener(self.store, mode="r+", path=self.path, storage_options=self.options,
                      config=self.config, **kwargs)

    def _open_handles(self):
        """The handles beside the writer's, opened anew (as after a resize elsewhere): the
        cached one through zarr-python's asyncio name, `zarrcore.api.asynchronous`."""
        self.cached = asyncio.run(self._open(zarrcore.api.asynchronous.open_array,
                                             cache_bytes=1 << 20)).sync_array
        self.shared = (self._open(cache_bytes=1 << 20, shared_cache=True)
                       if SHARED_CACHE and self.place.kind != "memory" else None)

    def handles(self):
        return [h for h in (self.array, self.cached, self.shared) if h is not None]

    def _handle(self, data):
        return data.draw(st.sampled_from(self.handles()))

    def _value(self, data, shape):
        if data.draw(st.booleans()):
            return np.int32(data.draw(st.integers(-50, 50)))
        seed = data.draw(st.integers(0, 2**32 - 1))
        return np.random.default_rng(seed).integers(-1000, 1000, size=shape, dtype="i4")

    def _selection(self, data, writing=False):
        kind, selection = draw_selection(data.draw, self.model.shape, writing)
        if kind == "block":
            chunks = self.objects  # (blocks are the stored objects: shards where sharded)
            # (blocks are selected by step 1 only)
            selection = tuple(slice(s.start, s.stop) for s in
                              (_slice(data.draw, -(-n // c)) for n, c in
                               zip(self.model.shape, chunks)))
            key = tuple(slice(s.start * c, s.stop * c) for s, c in zip(selection, chunks))
            return kind, selection, key
        return kind, selection, numpy_key(kind, selection)

    @staticmethod
    def _read(handle, kind, selection):
        return {"basic": handle.get_basic_selection, "orthogonal": handle.get_orthogonal_selection,
                "coordinate": handle.get_coordinate_selection, "mask": handle.get_mask_selection,
                "block": handle.get_block_selection}[kind](selection)

    @staticmethod
    def _write(handle, kind, selection, value):
        {"basic": handle.set_basic_selection, "orthogonal": handle.set_orthogonal_selection,
         "coordinate": handle.set_coordinate_selection, "mask": handle.set_mask_selection,
         "block": handle.set_block_selection}[kind](selection, value)

    def nonempty(self):
        return self.model.size > 0

    # -- Array ---------------------------------------------------------------------------
    @rule(data=st.data())
    @precondition(nonempty)
    def write(self, data):
        self.write_through(self._handle(data), data)

    @rule(data=st.data())
    @precondition(nonempty)
    def read(self, data):
        kind, selection, key = self._selection(data)
        np.testing.assert_array_equal(self._read(self._handle(data), kind, selection),
                                      self.model[key])

    # -- handles that know nothing of what was written, or what their maker knew ----------
    @rule(data=st.data(), cancel=st.booleans())
    @precondition(nonempty)
    def fresh_handle_write(self, data, cancel):
        """A handle opened afresh, as a new process opens it, writes: on an object store it
        learns the versions of the objects stored before (listings or a HEAD each) and
        puts over them (G4); its write future cancelled at random (G1, G2)."""
        handle = self._open()
        if cancel:
            self.cancel_write_future(handle, data)
        else:
            self.write_through(handle, data)

    @rule(data=st.data(), cancel=st.booleans())
    @precondition(nonempty)
    def configured_handle_write(self, data, cancel):
        """A handle that `with_config` made of one opened afresh writes as the one it came
        from would: it learns the versions of the objects stored before (G4); its write
        future cancelled at random (G1, G2). (A zip's chunks of fill stay written.)"""
        settings = {"num_threads": data.draw(st.integers(1, 2))}
        if self.place.kind != "zip":
            settings["write_empty_chunks"] = data.draw(st.booleans())
        handle = self._open().with_config(settings)
        if cancel:
            self.cancel_write_future(handle, data)
        else:
            self.write_through(handle, data)

    @rule(data=st.data())
    @precondition(lambda self: self.nonempty() and self.address is not None)
    def pickled_handle_write(self, data):
        """A handle pickled and unpickled (as a task ships it) writes, with what its maker
        knew of what was stored before (G4). (Where another process reaches the data: a
        memory store's or an open zip's copy holds data of its own.)"""
        self.write_through(pickle.loads(pickle.dumps(self._handle(data))), data)

    @rule(data=st.data())
    @precondition(lambda self: self.nonempty() and self.group is not None)
    def group_member_write(self, data):
        """The handle the group that made the array gives (`group["x"]`), which writes its
        new objects as new (G4), and reads what the others wrote."""
        member = self.group[self.path]
        if self.config:  # (a handle's own settings are not stored: a zip's given again)
            member = member.with_config(self.config)
        np.testing.assert_array_equal(member[...], self.model)
        self.write_through(member, data)

    def write_through(self, handle, data):
        kind, selection, key = self._selection(data, writing=True)
        value = self._value(data, self.model[key].shape)
        self._write(handle, kind, selection, value)
        self.model[key] = value

    @rule(data=st.data())
    def resize(self, data):
        low = self.model.shape if self.place.kind == "zip" else (0, 0)  # (a zip only grows)
        shape = tuple(data.draw(st.integers(lo, MAX_SIDE)) for lo in low)
        self.array.resize(shape)  # (G8: the other handles see it once opened anew)
        grown = np.full(shape, FILL, dtype="i4")
        common = tuple(slice(0, min(a, b)) for a, b in zip(shape, self.model.shape))
        grown[common] = self.model[common]
        self.model = grown
        self._open_handles()

    @rule(data=st.data())
    @precondition(lambda self: self.model.shape[0] < MAX_SIDE)
    def append(self, data):
        rows = data.draw(st.integers(1, MAX_SIDE - self.model.shape[0]))
        value = self._value(data, (rows, self.model.shape[1]))
        value = np.broadcast_to(value, (rows, self.model.shape[1]))
        self.array.append(value)
        self.model = np.concatenate([self.model, value])
        self._open_handles()

    @rule(data=st.data())
    def update_attributes(self, data):
        change = {data.draw(st.sampled_from("abc")): data.draw(st.integers(-5, 5))}
        self.array.update_attributes(change)
        self.attrs.update(change)

    # -- cancelled writes: each stored object old or new, settled when the cancel returns --
    def _settle(self, key, value):
        """After a write of `value` to `key` was cancelled: each stored object holds the
        model's values or the write's, never a mix (G1); the model takes what it holds when
        the cancelling call has returned, so what lands later fails the invariant (G2)."""
        new = self.model.copy()
        new[key] = value
        now = self._open()[...]
        grid = [range(0, n, o) for n, o in zip(self.model.shape, self.objects)]
        for corner in itertools.product(*grid):
            region = tuple(slice(c, c + o) for c, o in zip(corner, self.objects))
            if np.array_equal(now[region], new[region]):
                self.model[region] = new[region]
            else:
                np.testing.assert_array_equal(
                    now[region], self.model[region],
                    err_msg=f"the object at {corner} is neither old nor new")

    @rule(data=st.data())
    @precondition(nonempty)
    def cancelled_async_write(self, data):
        kind, selection, key = self._selection(data, writing=True)
        value = self._value(data, self.model[key].shape)
        after = data.draw(st.sampled_from(CANCEL_AFTER))
        aa = self._handle(data).async_array
        setter = {"basic": aa.set_basic_selection, "orthogonal": aa.set_orthogonal_selection,
                  "coordinate": aa.set_coordinate_selection, "mask": aa.set_mask_selection,
                  "block": aa.set_block_selection}[kind]

        async def cancelled():
            task = asyncio.ensure_future(setter(selection, value))
            await asyncio.sleep(after)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

        asyncio.run(cancelled())
        self._settle(key, value)

    @rule(data=st.data())
    @precondition(nonempty)
    def cancelled_write_future(self, data):
        self.cancel_write_future(self._handle(data), data)

    def cancel_write_future(self, handle, data):
        kind, selection, key = self._selection(data, writing=True)
        if kind != "basic":
            kind, selection, key = "basic", tuple(slice(None) for _ in self.model.shape), ...
        value = self._value(data, self.model[key].shape)
        future = handle.write_future(selection, value)
        time.sleep(data.draw(st.sampled_from(CANCEL_AFTER)))
        if future.cancel():
            assert future.done() and future.cancelled()
        else:
            assert future.result() is None
        self._settle(key, value)

    # -- reads that are cancelled, or not ----------------------------------------------------
    def _requests(self):
        """The requests the store has answered (a memory store counts them; None elsewhere)."""
        reads = getattr(self.store, "reads", None)
        return None if reads is None else sum(reads.values())

    def _no_request_after(self, returned):
        """(G3) Nothing of a cancelled read reaches the store once it has returned."""
        if returned is not None:
            time.sleep(0.002)
            assert self._requests() == returned

    @rule(data=st.data(), cancel=st.booleans())
    @precondition(nonempty)
    def async_read(self, data, cancel):
        kind, selection, key = self._selection(data)
        handle = self._handle(data)
        after = data.draw(st.sampled_from(CANCEL_AFTER))
        many = data.draw(st.integers(1, 3))

        async def read():
            aa = handle.async_array
            getter = aa.getitem if kind == "basic" else {
                "orthogonal": aa.get_orthogonal_selection,
                "coordinate": aa.get_coordinate_selection, "mask": aa.get_mask_selection,
                "block": aa.get_block_selection}[kind]
            tasks = [asyncio.ensure_future(getter(selection)) for _ in range(many)]
            if cancel:
                await asyncio.sleep(after)
                for t in tasks:
                    t.cancel()
            return await asyncio.gather(*tasks, return_exceptions=True)

        results = asyncio.run(read())
        self._no_request_after(self._requests())
        for got in results:
            if isinstance(got, asyncio.CancelledError):
                assert cancel
            else:
                np.testing.assert_array_equal(got, self.model[key])  # (G3, G4)

    @rule(data=st.data(), cancel=st.booleans())
    @precondition(nonempty)
    def read_future(self, data, cancel):
        kind, selection, key = self._selection(data)
        if kind != "basic":
            kind, selection, key = "basic", ..., ...
        future = self._handle(data).read_future(selection)
        if cancel:
            time.sleep(data.draw(st.sampled_from(CANCEL_AFTER)))
            if future.cancel():
                assert future.done()
                self._no_request_after(self._requests())
                return
        np.testing.assert_array_equal(future.result(timeout=60), self.model[key])  # (G3)

    # -- lazy views, made before and used after resizes -------------------------------
    @rule(data=st.data())
    @precondition(lambda self: len(self.views) < 6)
    def make_view(self, data):
        """A view of basic and orthogonal steps, kept with the array coordinates it selects
        (per axis: an index array, or an int for a dropped axis)."""
        # (of the handle that resizes: another handle shows a resize once opened anew)
        view, coords = self.array.lazy, [np.arange(n) for n in self.model.shape]
        for _ in range(data.draw(st.integers(1, 2))):
            live = [k for k, c in enumerate(coords) if not isinstance(c, int)]
            key = []
            for k in live:
                n = len(coords[k])
                if n and data.draw(st.booleans()):
                    key.append(data.draw(st.integers(0, n - 1)))
                else:
                    s = _slice(data.draw, n)
                    key.append(slice(s.start, s.stop, s.step) if data.draw(st.booleans())
                               else slice(s.stop - 1 if s.stop > s.start else None,
                                          s.start - 1 if s.start else None, -s.step))
            view = view[tuple(key)]
            for k, item in zip(live, key):
                coords[k] = int(coords[k][item]) if isinstance(item, int) else coords[k][item]
        assert view.shape == tuple(len(c) for c in coords if not isinstance(c, int))
        self.views.append((view, coords))

    def _view_key(self, coords):
        """The model's numpy key of a view's coordinates, or None where one lies outside the
        array's shape now."""
        for c, n in zip(coords, self.model.shape):
            if np.any(np.asarray(c) >= n):
                return None
        arrays = [c for c in coords if not isinstance(c, int)]
        grids = iter(np.ix_(*arrays)) if arrays else iter(())
        return tuple(c if isinstance(c, int) else next(grids) for c in coords)

    @rule(data=st.data())
    @precondition(lambda self: self.views)
    def use_view(self, data):
        view, coords = data.draw(st.sampled_from(self.views))
        key = self._view_key(coords)
        writing = data.draw(st.booleans())
        value = self._value(data, view.shape)
        if key is None and view.size:  # (G6: refused, nothing written; the invariant)
            with pytest.raises(ViewOutsideArrayError, match="outside the array's shape"):
                view.write(value) if writing else view.read()
            return
        # (G5: exactly the region it was made from)
        if writing:
            view.write(value)
            if view.size:
                self.model[key] = np.broadcast_to(value, view.shape).reshape(
                    self.model[key].shape)
        else:
            got = view.read()
            assert np.shape(got) == view.shape
            if view.size:
                np.testing.assert_array_equal(got, self.model[key].reshape(view.shape))

    # -- chunk-level access ----------------------------------------------------------------
    def _chunk(self, data):
        chunks = self.array.chunks
        coords = tuple(data.draw(st.integers(0, -(-n // c) - 1))
                       for n, c in zip(self.model.shape, chunks))
        return coords, tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks))

    @rule(data=st.data())
    @precondition(nonempty)
    def chunk_read(self, data):
        coords, region = self._chunk(data)
        np.testing.assert_array_equal(self._handle(data).get_chunk(coords), self.model[region])

    @rule(data=st.data())
    @precondition(nonempty)
    def chunk_write(self, data):
        coords, region = self._chunk(data)
        value = np.broadcast_to(self._value(data, self.model[region].shape),
                                self.model[region].shape)
        self._handle(data).set_chunk(coords, value)
        self.model[region] = value

    def _whole_chunks(self):
        """The grid of the chunks that lie wholly inside the array."""
        return tuple(n // c for n, c in zip(self.model.shape, self.array.chunks))

    @rule(data=st.data())
    @precondition(lambda self: all(self._whole_chunks()))
    def chunk_bytes_copied(self, data):
        """One chunk's stored bytes stored as another's: it then holds the first's values.
        (Chunks inside the array: what an edge chunk stores beyond the array's end is its
        own, and never shows.)"""
        grid = self._whole_chunks()
        source, target = (tuple(data.draw(st.integers(0, n - 1)) for n in grid)
                          for _ in range(2))
        reader, writer = self._handle(data), self._handle(data)
        # (draws only above: what is stored depends on where cancelled writes stopped)
        chunks = self.array.chunks
        source_region, target_region = (tuple(slice(i * c, (i + 1) * c)
                                              for i, c in zip(coords, chunks))
                                        for coords in (source, target))
        stored = reader.get_chunk_bytes(source)
        if stored is None:  # (not stored: of fill, and nothing to copy)
            np.testing.assert_array_equal(self.model[source_region], FILL)
            return
        writer.set_chunk_bytes(target, stored)
        self.model[target_region] = self.model[source_region]

    # -- another process -------------------------------------------------------------------
    @rule(data=st.data())
    @precondition(lambda self: self.nonempty() and self.address is not None
                  and self.pool is not None)
    def other_process_writes(self, data):
        key = tuple(_slice(data.draw, n) for n in self.model.shape)
        value = self._value(data, self.model[key].shape)
        self.pool.submit(write_region, self.address, key, value).result(timeout=60)
        self.model[key] = value

    @rule(data=st.data())
    @precondition(lambda self: self.nonempty() and self.address is not None
                  and not self.killed)
    def killed_writer(self, data):
        """Another process killed (SIGKILL) at a random moment of its write: each stored
        object old or new (G1)."""
        bounds = [sorted(data.draw(st.lists(st.integers(0, n), min_size=2, max_size=2)))
                  for n in self.model.shape]
        seed = data.draw(st.integers(0, 2**32 - 1))
        after = data.draw(st.sampled_from(CANCEL_AFTER))
        child = subprocess.Popen(
            [sys.executable, os.path.join(SUPPORT, "model_child.py"),
             json.dumps([self.address, bounds, seed])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline() == "ready\n"
            child.stdin.write("go\n")
            child.stdin.flush()
            time.sleep(after)
        finally:
            child.kill()
            child.wait(60)
        self.killed = True
        key = tuple(slice(lo, hi) for lo, hi in bounds)
        self._settle(key, region_value(seed, self.model[key].shape))

    # -- Ray Data: tasks in other processes read and write rows -------------------------------
    def _ray_ready(self):
        return (self.ray is not None and self.address is not None and self.nonempty()
                and self.ray_steps < RAY_STEPS)

    def _ray_rows(self, data):
        """An axis, the rows along it a Ray write covers (any order, any gaps) and their
        values."""
        axis = data.draw(st.integers(0, 1))
        n = self.model.shape[axis]
        rows = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        seed = data.draw(st.integers(0, 2**32 - 1))
        other = self.model.shape[1 - axis]
        values = np.random.default_rng(seed).integers(-1000, 1000, (len(rows), other), "i4")
        return axis, rows, values

    def _ray_dataset(self, rows, values, data):
        """The rows as a dataset of several blocks, so that tasks share shards."""
        items = [{"data": v, "index": r} for r, v in zip(rows, values)]
        blocks = data.draw(st.integers(1, min(3, len(items))))
        return self.ray.data.from_items(items, override_num_blocks=blocks)

    @rule(data=st.data())
    @precondition(_ray_ready)
    def ray_read(self, data):
        import zarrcore.ray as zr
        self.ray_steps += 1
        axis = data.draw(st.integers(0, 1))
        url, options = self.address
        dataset = zr.read_zarr(url, storage_options=options, axis=axis,
                               blocks=data.draw(st.sampled_from(["shards", "chunks"])))
        batches = list(dataset.iter_batches(batch_size=None, batch_format="numpy"))
        index = np.concatenate([b["index"] for b in batches])
        values = np.concatenate([b["data"] for b in batches])
        assert sorted(index.tolist()) == list(range(self.model.shape[axis]))
        np.testing.assert_array_equal(values, np.moveaxis(self.model, axis, 0)[index])  # (G4)

    @rule(data=st.data())
    @precondition(_ray_ready)
    def ray_write(self, data):
        import zarrcore.ray as zr
        self.ray_steps += 1
        axis, rows, values = self._ray_rows(data)
        zr.write_zarr(self._ray_dataset(rows, values, data), self._handle(data), axis=axis)
        np.moveaxis(self.model, axis, 0)[rows] = values  # (G4)

    @rule(data=st.data())
    @precondition(lambda self: self._ray_ready() and not self.killed)
    def killed_ray_writer(self, data):
        """A Ray write task's worker killed (os._exit) at a random moment, then retried by
        Ray: when the write returns, every row is written (G1, G4)."""
        import zarrcore.ray as zr
        self.ray_steps += 1
        axis, rows, values = self._ray_rows(data)
        after = data.draw(st.sampled_from(CANCEL_AFTER))
        marker = os.path.join(tempfile.gettempdir(),
                              f"zarrcore-model-ray-{os.getpid()}-{next(_RAY_KILLS)}")
        sink = _sink_killed_once(zr.ZarrcoreDatasink, marker, after)(self.array, axis)
        try:
            self._ray_dataset(rows, values, data).write_datasink(
                sink, ray_remote_args={"max_retries": 3})
        finally:
            if os.path.exists(marker):
                os.unlink(marker)
        self.killed = True
        np.moveaxis(self.model, axis, 0)[rows] = values

    # -- Cubed: computations through zarr-python with zarrcore's pipeline -----------------
    def _cubed_ready(self):
        return (self.cubed is not None and self.address is not None and self.nonempty()
                and self.cubed_steps < CUBED_STEPS)

    def _cubed_chunks(self, data):
        return tuple(data.draw(st.integers(1, n)) for n in self.model.shape)

    @rule(data=st.data())
    @precondition(_cubed_ready)
    def cubed_read(self, data):
        self.cubed_steps += 1
        chunks = self._cubed_chunks(data)
        with self.cubed.on_zarrcore() as (cubed, zarr):
            x = cubed.from_zarr(self.address[0], spec=self.cubed.spec)
            got = x.rechunk(chunks).compute(executor=self.cubed.executor)
        np.testing.assert_array_equal(got, self.model)  # (G4)

    @rule(data=st.data())
    @precondition(_cubed_ready)
    def cubed_write(self, data):
        """Cubed's tasks (threads) each store one block of a source chunked as the array (as
        Cubed's `to_zarr` makes it; a sharded target's source Cubed rechunks to its shards):
        the array holds the source after (G4). (Not into a region, nor from other chunks:
        Cubed writes each source block over a target chunk's region whatever their shapes,
        or fails in its own planning.)"""
        self.cubed_steps += 1
        value = self._value(data, self.model.shape)
        value = np.broadcast_to(value, self.model.shape).copy()
        with self.cubed.on_zarrcore() as (cubed, zarr):
            target = zarr.open_array(self.address[0], mode="r+")
            source = cubed.from_array(value, chunks=target.chunks, spec=self.cubed.spec)
            cubed.store(source, target, executor=self.cubed.executor)
        self.model[...] = value

    # -- after every step ------------------------------------------------------------------
    @invariant()
    def every_handle_reads_the_model(self):
        """(G4) No write is lost; (G7) no handle's cache serves a stale chunk."""
        fresh = self._open()
        assert fresh.shape == self.model.shape
        assert fresh.attrs.asdict() == self.attrs
        for handle in [fresh, *self.handles()]:
            np.testing.assert_array_equal(handle[...], self.model)

    def teardown(self):
        if self.place.kind == "zip":
            self.store.close()


@pytest.fixture(scope="module")
def second_process():
    """A process of its own (spawned: nothing inherited) for the second writer."""
    with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(int).result(timeout=120)  # (started and importing before the first use)
        yield pool


_RAY_KILLS = itertools.count()


def _sink_killed_once(base, marker, after):
    """A subclass of the datasink `base` whose first write task (the one that creates
    `marker`) has its worker process killed `after` seconds in; made here so that Ray pickles
    it by value."""
    class KilledOnce(base):
        def write(self, blocks, ctx):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                threading.Timer(after, os._exit, (1,)).start()
            return super().write(blocks, ctx)
    return KilledOnce


@pytest.fixture(scope="module")
def ray_cluster():
    """The ray module with a local cluster of two worker processes, or None without Ray
    (the test extra installs it)."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        yield None
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


class CubedRun:
    """Cubed's spec (its intermediates under `work`) and threads executor, and the context in
    which its zarr-python runs zarrcore's pipeline for every request (a fallback raises)."""

    def __init__(self, work):
        import cubed
        from cubed.runtime.create import create_executor

        self.spec = cubed.Spec(work_dir=str(work), allowed_mem="100MB")
        self.executor = create_executor("threads", {"max_workers": 2})

    @staticmethod
    @contextlib.contextmanager
    def on_zarrcore():
        import cubed
        import zarr

        with zarr.config.set({"codec_pipeline.path": PIPELINE}), \
                zarrcore.config.set(pipeline_fallback=False):
            yield cubed, zarr


def _run(place, pool, ray=None, cubed=None, budget=None):
    examples, steps = BUDGET[budget or place.kind]
    machine = type(f"ArrayModelOn{place.kind.title()}", (ArrayModel,),
                   {"place": place, "pool": pool, "ray": ray, "cubed": cubed})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples * SCALE, stateful_step_count=steps * SCALE, deadline=None,
        # (large_base_example: the simplest run takes every step, which at a large SCALE is
        # more data than the health check allows for a base example.)
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.data_too_large, HealthCheck.large_base_example]))


@pytest.mark.parametrize("kind", ["memory", "directory", "zip"])
def test_every_face_keeps_the_array_equal_to_its_model(kind, tmp_path, second_process,
                                                       ray_cluster):
    directory = kind == "directory"
    _run(Place(kind, str(tmp_path)), second_process if directory else None,
         ray_cluster if directory else None)


def test_every_face_keeps_an_s3_array_equal_to_its_model(s3_bucket, second_process,
                                                         ray_cluster):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    _run(Place("s3", None, s3_bucket), second_process, ray_cluster)


def test_every_face_keeps_the_array_equal_to_its_model_under_cubed(tmp_path):
    """The directory's run with Cubed's rules (in the virtualenv of the newest peers, where
    Cubed installs), the other processes' and Ray's left to the run above."""
    pytest.importorskip("zarr", minversion="3.4",
                        reason="the pipeline implements zarr-python 3.4's CodecPipeline")
    pytest.importorskip("cubed", minversion="0.28",
                        reason="the cubed extra is not installed (it needs Python >= 3.12)")
    _run(Place("directory", str(tmp_path)), None, cubed=CubedRun(tmp_path / "work"),
         budget="cubed")


def test_the_checker_checks_exactly_the_guarantees_page():
    """The sentences (G1)... of docs/guide/guarantees.md are the ones this checker cites."""
    page = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide", "guarantees.md")
    with open(page) as f:
        promised = set(re.findall(r"\(G(\d+)\)", f.read()))
    with open(__file__) as f:
        cited = set(re.findall(r"\bG(\d+)\b", f.read()))
    assert promised and promised == cited
