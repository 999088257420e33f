"""Lazy views (`Array.lazy`): chains of basic, orthogonal and vectorized selections and
transposes give numpy's values, read nothing until `read()`, read each chunk once, write
what numpy would write, and pickle."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import SelectionError, ShapeMismatchError, ViewOutsideArrayError
from zarrcore.storage import MemoryStore
from zarrcore.nodes.views import IndexTransform, LazyArray

from counting_store import CountingStore


SHAPE = (9, 8, 7)
DATA = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)


def _array(store=None, **kwargs):
    a = zarrcore.create_array(store if store is not None else MemoryStore(), shape=SHAPE,
                              chunks=(4, 3, 5), dtype="int32", **kwargs)
    a[...] = DATA
    return a


# -- random selections, each a function of the shape it indexes ----------------------
@st.composite
def _slice(draw, n):
    start = draw(st.none() | st.integers(-n - 2, n + 2))
    stop = draw(st.none() | st.integers(-n - 2, n + 2))
    step = draw(st.none() | st.integers(-3, 3).filter(bool))
    return slice(start, stop, step)


def _basic_item(draw, n):
    if n and draw(st.booleans()):
        return draw(st.integers(-n, n - 1))
    return draw(_slice(n))


@st.composite
def _step(draw, shape):
    """(kind, key): one selection of a view of `shape`; kind is the view method."""
    kinds = ["basic", "transpose"]
    if shape and all(shape):
        kinds += ["orthogonal", "vectorized", "numpy"]
    kind = draw(st.sampled_from(kinds))
    ndim = len(shape)
    if kind == "transpose":
        return kind, tuple(draw(st.permutations(range(ndim))))
    if kind == "basic":
        key = [_basic_item(draw, n) for n in shape[:draw(st.integers(0, ndim))]]
        if draw(st.booleans()):
            key.insert(draw(st.integers(0, len(key))), None)
        if draw(st.booleans()):
            key.append(Ellipsis)
        return kind, tuple(key)
    if kind == "orthogonal":
        key = []
        for n in shape:
            choice = draw(st.sampled_from(["int", "slice", "ints", "bools"]))
            if choice == "int":
                key.append(draw(st.integers(-n, n - 1)))
            elif choice == "slice":
                key.append(draw(_slice(n)))
            elif choice == "ints":
                key.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1,
                                                  max_size=4))))
            else:
                key.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        return kind, tuple(key)
    # vectorized and numpy: broadcastable int arrays on some axes, slices or ints elsewhere
    count = draw(st.integers(1, ndim))
    axes = sorted(draw(st.permutations(range(ndim)))[:count])
    points = draw(st.integers(1, 3))
    rank = draw(st.integers(1, 2))
    key = []
    for axis, n in enumerate(shape):
        if axis in axes:
            arr = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=points ** rank,
                                         max_size=points ** rank))).reshape((points,) * rank)
            if draw(st.booleans()):
                arr = arr[:1]  # broadcasts against the others
            key.append(arr)
        elif kind == "numpy" and draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            key.append(draw(_slice(n)))
    return kind, tuple(key)


def _numpy_apply(x, kind, key):
    if kind == "transpose":
        return x.transpose(key)
    if kind == "orthogonal":
        items = [np.nonzero(k)[0] if isinstance(k, np.ndarray) and k.dtype == bool else k
                 for k in key]
        arrays = [i for i, k in enumerate(items) if isinstance(k, np.ndarray)]
        # np.ix_ for the arrays, then the slices and ints one axis at a time
        out = x
        for i in arrays:
            index = [slice(None)] * x.ndim
            index[i] = items[i]
            out = out[tuple(index)]
        return out[tuple(slice(None) if isinstance(k, np.ndarray) else k for k in items)]
    if kind == "vectorized":
        arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
        out = x[key]
        if arrays != list(range(arrays[0], arrays[-1] + 1)) or arrays[0] == 0:
            return out  # numpy puts the broadcast axes first too
        block = np.broadcast_shapes(*(key[i].shape for i in arrays))
        start = len([k for k in key[:arrays[0]] if isinstance(k, slice)])
        moved = list(range(start, start + len(block)))
        return np.moveaxis(out, moved, list(range(len(block))))
    return x[key]


def _view_apply(v, kind, key):
    if kind == "transpose":
        return v.transpose(key)
    if kind == "orthogonal":
        return v.oindex[key]
    if kind == "vectorized":
        return v.vindex[key]
    return v[key]


@st.composite
def _chain(draw):
    steps = []
    expected = DATA
    for _ in range(draw(st.integers(1, 3))):
        kind, key = draw(_step(expected.shape))
        steps.append((kind, key))
        expected = _numpy_apply(expected, kind, key)
    return steps, expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chain())
def test_chains_of_views_read_what_numpy_selects(chain):
    steps, expected = chain
    store = CountingStore()
    a = _array(store)
    view = a.lazy
    store.reads.clear()
    for kind, key in steps:
        view = _view_apply(view, kind, key)
    assert not store.reads  # composing reads nothing
    assert view.shape == expected.shape and view.ndim == expected.ndim
    np.testing.assert_array_equal(view.read(), expected)
    assert max(store.reads.values(), default=1) == 1  # one planned pass: each chunk once
    np.testing.assert_array_equal(np.asarray(view), expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chain())
def test_writes_through_views_are_numpys(chain):
    steps, _ = chain
    a = _array()
    view = a.lazy
    want = DATA.copy()
    for kind, key in steps:
        view = _view_apply(view, kind, key)
    value = np.arange(np.prod(view.shape), dtype="int32").reshape(view.shape) + 10_000
    view.write(value)
    # numpy copies on advanced steps, so follow the positions: write each of the view's
    # values where its position lies in the array.
    positions = np.arange(DATA.size).reshape(SHAPE)
    for kind, key in steps:
        positions = _numpy_apply(positions, kind, key)
    want.reshape(-1)[positions.reshape(-1)] = value.reshape(-1)  # the last duplicate wins
    np.testing.assert_array_equal(a[...], want)


def test_the_store_is_read_once_per_chunk_for_a_chain():
    store = CountingStore()
    a = _array(store)
    store.reads.clear()
    view = a.lazy[1:8][::-1, :, 2:].T.oindex[[0, 2, 2, 4], :, [5, 1, 0]]
    assert not store.reads
    np.testing.assert_array_equal(
        view.read(), DATA[1:8][::-1, :, 2:].T[np.ix_([0, 2, 2, 4], range(8), [5, 1, 0])])
    assert store.reads and set(store.reads.values()) == {1}
    store.reads.clear()
    points = a.lazy[:, 1:].vindex[[0, 8, 8, 3], [0, 6, 6, 2]][::-1]
    np.testing.assert_array_equal(points.read(), DATA[:, 1:][[0, 8, 8, 3], [0, 6, 6, 2]][::-1])
    assert set(store.reads.values()) == {1}


def test_boolean_masks_select_as_numpys():
    a = _array()
    mask = (DATA[:, :, 0] % 3 == 0)
    np.testing.assert_array_equal(a.lazy[mask].read(), DATA[mask])
    np.testing.assert_array_equal(a.lazy[:, ::-1][mask[:, ::-1], 2].read(),
                                  DATA[:, ::-1][mask[:, ::-1], 2])
    np.testing.assert_array_equal(a.lazy.oindex[mask[:, 0], :, mask[:7, 1]].read(),
                                  DATA[mask[:, 0]][:, :, mask[:7, 1]])


def test_views_pickle_and_read_alike():
    a = _array()
    view = a.lazy.oindex[[1, 5], ::2][..., ::-1]
    back = pickle.loads(pickle.dumps(view))
    assert isinstance(back, LazyArray) and back.transform == view.transform
    np.testing.assert_array_equal(back.read(), view.read())
    points = a.lazy.vindex[[1, 2], [3, 4]]
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(points)).read(), DATA[[1, 2], [3, 4]])


def test_labelled_dimensions_select_and_transpose_by_name():
    a = _array(dimension_names=("t", "y", "x"))
    view = a.lazy
    assert view.dims == ("t", "y", "x")
    sub = view.isel(x=[4, 0], t=slice(2, None, 3))
    assert sub.dims == ("t", "y", "x")
    np.testing.assert_array_equal(sub.read(), DATA[2::3][:, :, [4, 0]])
    moved = sub.transpose("x", "t", "y")
    assert moved.dims == ("x", "t", "y")
    np.testing.assert_array_equal(moved.read(), DATA[2::3][:, :, [4, 0]].transpose(2, 0, 1))
    assert view[0].dims == ("y", "x") and view[None].dims == (None, "t", "y", "x")
    with pytest.raises(KeyError, match="'z'"):
        view.isel(z=0)


def test_a_view_is_a_numpy_like_object():
    a = _array()
    view = a.lazy[2:, ::-2]
    assert (view.shape, view.dtype, view.ndim, len(view), view.size) == (
        (7, 4, 7), np.dtype("int32"), 3, 7, 7 * 4 * 7)
    assert isinstance(view[0], LazyArray) and view[1, 2, 3].read() == DATA[2:, ::-2][1, 2, 3]
    assert np.asarray(view, dtype="float64").dtype == np.float64
    with pytest.raises(ValueError, match="copy"):
        view.__array__(copy=False)  # numpy 2's protocol, whichever numpy is here
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # numpy < 2's asarray has no copy
        with pytest.raises(ValueError, match="copy"):
            np.asarray(view, copy=False)


def test_bad_selections_raise_numpys_errors():
    view = _array().lazy
    with pytest.raises(SelectionError, match="out of bounds for axis 0"):
        view[9]
    with pytest.raises(SelectionError, match="too many indices"):
        view[0, 0, 0, 0]
    with pytest.raises(SelectionError, match="single ellipsis"):
        view[..., ...]
    with pytest.raises(SelectionError, match="broadcast"):
        view.vindex[[0, 1], [0, 1, 2]]
    with pytest.raises(SelectionError, match="1-D integer"):
        view.oindex[[[0]]]
    with pytest.raises(SelectionError, match="boolean index"):
        view[np.ones(3, bool)]
    with pytest.raises(SelectionError, match="not 'a'"):
        view["a"]
    with pytest.raises(ValueError, match="step cannot be zero"):
        view[::0]
    with pytest.raises(ShapeMismatchError, match=r"\(2,\)"):
        view[0].write(np.zeros(2))
    with pytest.raises(SelectionError, match="axis 3"):
        view.transpose(0, 1, 3)


def test_writes_through_a_view_take_the_arrays_paths():
    a = _array()
    a.lazy[::-1, 0, [1, 3]] = 7
    want = DATA.copy()
    want[::-1, 0, [1, 3]] = 7
    np.testing.assert_array_equal(a[...], want)
    ro = zarrcore.open_array(a.store, mode="r")
    with pytest.raises(zarrcore.errors.ReadOnlyError):
        ro.lazy.T[0] = 1


def test_dask_and_xarray_take_views():
    da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
    view = _array().lazy[:, ::-1].transpose(2, 0, 1)
    lazy = da.from_array(view, chunks=(3, 4, 4))
    np.testing.assert_array_equal(lazy.compute(), DATA[:, ::-1].transpose(2, 0, 1))
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    arr = xr.DataArray(view, dims=("x", "t", "y"))
    np.testing.assert_array_equal(arr.values, DATA[:, ::-1].transpose(2, 0, 1))


def test_transforms_compose_in_the_arrays_coordinates():
    t = IndexTransform.identity((10, 6)).index((slice(8, 1, -2), [5, 0]), "orthogonal")
    t = t.index((slice(1, None), 1))
    assert t.shape == (3,) and t.maps[1] == 0
    assert t.plan().kind == "basic" and t.plan().selection == (slice(6, 0, -2), 0)


# Chains as tensorstore spells them: its views keep absolute coordinates, so each step is
# shifted back to origin 0 (numpy's and zarrcore's frame) before the next.
TENSORSTORE_CHAINS = [
    [("numpy", np.s_[1:8]), ("numpy", np.s_[::-2, :, 5:0:-2]), ("T", None)],
    [("oindex", np.s_[[7, 0, 0, 3], 1:]), ("numpy", np.s_[::-1, ::3]),
     ("vindex", np.s_[[0, 3, 1], [1, 0, 2]])],
    [("T", None), ("vindex", np.s_[[6, 1], :, [0, 8]]), ("oindex", np.s_[[1, 0, 1], ::-1])],
]


@pytest.mark.parametrize("steps", TENSORSTORE_CHAINS, ids=range(len(TENSORSTORE_CHAINS)))
def test_chains_read_what_tensorstore_reads(tmp_path, steps):
    ts = pytest.importorskip("tensorstore", reason="tensorstore is not installed")
    path = str(tmp_path / "a.zarr")
    _array(path)
    theirs = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                     open=True).result()
    view = zarrcore.open_array(path, mode="r").lazy
    for kind, key in steps:
        if kind == "T":
            view, theirs = view.T, theirs.T
        else:
            view = {"numpy": view, "oindex": view.oindex, "vindex": view.vindex}[kind][key]
            theirs = {"numpy": theirs, "oindex": theirs.oindex,
                      "vindex": theirs.vindex}[kind][key]
        theirs = theirs[ts.d[:].translate_to[0]]
    np.testing.assert_array_equal(view.read(), theirs.read().result())


# -- views made before a resize -------------------------------------------------------
def _resized(n=100, to=50):
    a = zarrcore.create_array(MemoryStore(), shape=(n,), chunks=(10,), dtype="int32")
    a[...] = np.arange(n)
    views = {"tail": a.lazy[60:100], "across": a.lazy[40:60], "reversed": a.lazy[::-1],
             "one": a.lazy[60:61], "inside": a.lazy[10:20], "points": a.lazy.vindex[[3, 70]]}
    a.resize((to,))
    return a, views


@pytest.mark.parametrize("name", ["tail", "across", "reversed", "points"])
def test_a_view_cut_by_a_shrink_refuses_to_read(name):
    a, views = _resized()
    with pytest.raises(ViewOutsideArrayError, match=r"outside the array's shape \(50,\)"):
        views[name].read()


@pytest.mark.parametrize("name", ["tail", "one", "across", "reversed"])
def test_a_view_cut_by_a_shrink_refuses_to_write(name):
    a, views = _resized()
    with pytest.raises(ViewOutsideArrayError) as raised:
        views[name].write(7)
    assert isinstance(raised.value, SelectionError)
    np.testing.assert_array_equal(a[...], np.arange(50))  # nothing written
    a.resize((100,))
    np.testing.assert_array_equal(a[50:], 0)  # nor beyond the shape


def test_a_view_inside_the_shrunk_array_keeps_its_region():
    a, views = _resized()
    np.testing.assert_array_equal(views["inside"].read(), np.arange(10, 20))
    views["inside"].write(-1)
    np.testing.assert_array_equal(a[10:20], -1)
    a.resize((200,))  # a view made before growth reads the region it was made with
    np.testing.assert_array_equal(a.lazy[150:].read(), 0)
    assert views["inside"].shape == (10,)


def test_a_view_names_the_region_it_selects():
    a, views = _resized()
    with pytest.raises(ViewOutsideArrayError, match=r"\[60:100\].*axis 0"):
        views["tail"].read()
