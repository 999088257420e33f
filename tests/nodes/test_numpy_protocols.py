"""A zarrcore Array as a numpy duck array (NEP 13 and 18): numpy's functions, ufuncs and the
arithmetic operators read it and give numpy arrays; functions of its shape or dtype read
nothing; other duck types (dask) still take their own turn."""
import numpy as np
import pytest

import zarrcore
from zarrcore.storage import MemoryStore


class ReadCountingStore(MemoryStore):
    def __init__(self):
        super().__init__()
        self.chunk_reads = 0

    def get(self, key, start=None, stop=None):
        if "/c/" in key or key.startswith("c/"):
            self.chunk_reads += 1
        return super().get(key, start, stop)


@pytest.fixture
def stored():
    store = ReadCountingStore()
    data = np.arange(12 * 10, dtype="float64").reshape(12, 10)
    a = zarrcore.create_array(store, shape=data.shape, chunks=(4, 5), dtype=data.dtype)
    a[...] = data
    store.chunk_reads = 0
    return a, data, store


def test_numpy_functions_and_ufuncs_read_the_array(stored):
    a, data, _ = stored
    for got, want in [(np.sum(a), np.sum(data)), (np.mean(a, axis=0), data.mean(axis=0)),
                      (np.concatenate([a, data]), np.concatenate([data, data])),
                      (np.where(a > 50, a, 0), np.where(data > 50, data, 0)),
                      (np.sin(a), np.sin(data)), (np.add.reduce(a, axis=1), data.sum(axis=1)),
                      (np.isnan(a), np.isnan(data)), (np.nanmax(a), np.nanmax(data))]:
        assert isinstance(got, (np.ndarray, np.generic))
        np.testing.assert_array_equal(got, want)


def test_operators_are_numpys(stored):
    a, data, _ = stored
    pairs = [(a + 1, data + 1), (2 - a, 2 - data), (a * a, data * data), (a / 2, data / 2),
             (a // 3, data // 3), (a % 7, data % 7), (a ** 2, data ** 2), (-a, -data),
             (abs(-a), data), (a < 5, data < 5), (a >= 5, data >= 5), (a @ data.T, data @ data.T)]
    for got, want in pairs:
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)
    ints = zarrcore.create_array({}, shape=(4,), chunks=(2,), dtype="int32")
    ints[...] = [1, 2, 3, 4]
    np.testing.assert_array_equal((ints & 1) | (ints << 2) ^ ~ints, (np.arange(1, 5) & 1) | (np.arange(1, 5) << 2) ^ ~np.arange(1, 5))
    # The handle keeps identity equality and stays hashable.
    assert a == a and a != ints and hash(a) == hash(a)


def test_metadata_functions_read_nothing(stored):
    a, _, store = stored
    assert np.shape(a) == (12, 10) and np.ndim(a) == 2
    assert np.size(a) == 120 and np.size(a, 1) == 10
    assert np.result_type(a, np.float32) == np.float64
    assert store.chunk_reads == 0


def test_other_duck_types_decide_with_zarrcore_arrays(stored):
    da = pytest.importorskip("dask.array", reason="needs dask")
    a, data, _ = stored
    d = da.from_array(a, chunks=(4, 5))
    np.testing.assert_array_equal((d + a).compute(), data * 2)
    np.testing.assert_array_equal(np.asarray(a), data)
    assert float(d.sum().compute()) == data.sum()
    # A ufunc cannot compute into an Array (it is no buffer).
    with pytest.raises(TypeError):
        np.add(data, 1, out=a)
    np.testing.assert_array_equal(np.concatenate([d, a]).compute(), np.concatenate([data, data]))
    assert hasattr(a + d, "dask")
