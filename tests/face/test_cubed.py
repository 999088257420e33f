"""Cubed on zarrcore: Cubed's default storage (zarr-python) with zarrcore's codec pipeline
(zarrcore.zarr_pipeline) reads and writes Cubed's inputs, intermediates and outputs, on regular
and rectilinear chunk grids, every request run by zarrcore (a fallback raises). A rechunk and
a reduction match numpy under each of Cubed's single-machine executors; a source chunked across
shards is written right; and Cubed's own tests that touch storage pass with zarrcore
underneath."""
import os
import subprocess
import sys

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3.4",
                           reason="the pipeline implements zarr-python 3.4's CodecPipeline")
cubed = pytest.importorskip("cubed", minversion="0.28",
                            reason="the cubed extra is not installed (it needs Python >= 3.12)")
import cubed.array_api as xp  # noqa: E402
from cubed.runtime.create import create_executor  # noqa: E402

import zarrcore  # noqa: E402
from zarrcore.zarr_pipeline import ZarrcorePipeline  # noqa: E402

PATH = "zarrcore.zarr_pipeline.ZarrcorePipeline"
# Cubed's executors on one machine: tasks in this process, on threads, in worker processes.
EXECUTORS = ["single-threaded", "threads", "processes"]


@pytest.fixture
def on_zarrcore(monkeypatch):
    """zarr-python through zarrcore's pipeline, every request run by zarrcore (a fallback
    raises), in this process and in the worker processes of Cubed's processes executor (by
    the environment, which they read when they import zarr-python and zarrcore)."""
    monkeypatch.setenv("ZARR_CODEC_PIPELINE__PATH", PATH)
    monkeypatch.setenv("ZARRCORE_PIPELINE_FALLBACK", "0")
    with zarr.config.set({"codec_pipeline.path": PATH}), \
            zarrcore.config.set(pipeline_fallback=False):
        yield


@pytest.fixture
def requests(monkeypatch):
    """The reads and writes zarrcore's pipeline runs in this process: {"read": n, "write": n}."""
    counted = {"read": 0, "write": 0}
    for name in counted:
        run = getattr(ZarrcorePipeline, name)

        async def counting(self, *args, _run=run, _name=name, **kwargs):
            counted[_name] += 1
            return await _run(self, *args, **kwargs)

        monkeypatch.setattr(ZarrcorePipeline, name, counting)
    return counted


def _source(path, data, **layout):
    """`data` written by zarrcore at `path`, as Cubed's input."""
    a = zarrcore.create_array(str(path), shape=data.shape, dtype=data.dtype, **layout)
    a[...] = data
    return str(path)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_rechunk_and_reduction_match_numpy(on_zarrcore, requests, tmp_path, executor):
    data = np.random.default_rng(0).random((60, 48)).astype("float32")
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem="20MB")
    x = cubed.from_zarr(_source(tmp_path / "in", data, chunks=(5, 8), shards=(20, 48)),
                        spec=spec)
    run = create_executor(executor)
    rechunked = x.rechunk((60, 6))
    np.testing.assert_array_equal(rechunked.compute(executor=run), data)
    total = xp.sum(x, axis=0)
    np.testing.assert_allclose(total.compute(executor=run), data.sum(axis=0), rtol=1e-5)
    means = xp.mean(rechunked, axis=1)
    cubed.to_zarr(means, str(tmp_path / "out"), executor=run)
    np.testing.assert_allclose(zarrcore.open_array(str(tmp_path / "out"))[...],
                               data.mean(axis=1), rtol=1e-5)
    # The intermediates are Zarr arrays in the work directory that zarrcore reads back.
    intermediates = [n for n in os.listdir(tmp_path / "work") if n.startswith("cubed-")]
    assert intermediates
    if executor != "processes":  # (the workers' requests are counted in the workers)
        assert requests["read"] and requests["write"]


def test_rectilinear_rechunks_run_through_zarrcore(on_zarrcore, requests, tmp_path):
    """An irregular rechunk (allow_irregular, in Cubed's own tests' shapes): Cubed's
    intermediate store has a rectilinear chunk grid, which zarrcore writes and reads."""
    data = np.arange(1001 * 1001, dtype="float64").reshape(1001, 1001)
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem=800_000)
    x = cubed.from_zarr(_source(tmp_path / "in", data, chunks=(38, 376)), spec=spec)
    y = x.rechunk((5, 146), allow_irregular=True)
    np.testing.assert_array_equal(y.compute(executor=create_executor("threads")), data)
    grids = set()
    for root, _, files in os.walk(tmp_path / "work"):
        node = zarrcore.open(root, mode="r") if "zarr.json" in files else None
        if getattr(node, "kind", None) == "array":
            grids.add(node.chunk_grid.is_regular)
            np.testing.assert_array_equal(node[...], data)
    assert False in grids, "an intermediate on a rectilinear grid"
    assert requests["read"] and requests["write"]


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_a_source_chunked_across_shards_is_written_whole(on_zarrcore, tmp_path, executor):
    """A source of 7-row chunks into shards of 16 rows: Cubed rechunks it to the shards (so
    that no two of its tasks share one), and zarrcore writes each shard whole."""
    expected = np.arange(112 * 24, dtype="int32").reshape(112, 24)
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem="20MB")
    target = zarr.create_array(str(tmp_path / "t"), shape=expected.shape, dtype="int32",
                               chunks=(4, 8), shards=(16, 24))
    x = cubed.from_array(expected, chunks=(7, 24), spec=spec)
    with pytest.warns(UserWarning, match="shard"):
        cubed.store(x, target, executor=create_executor(executor))
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "t"))[...], expected)


# Cubed's own test modules that touch storage (shipped in its wheel). Left out: the tests that
# need Cubed's diagnostics extra (rich), which is not installed here: test_rechunk_era5,
# test_rechunk_and_store, test_rechunk_plan_viz.
CUBED_TESTS = ["cubed.tests.storage.test_zarr", "cubed.tests.test_store",
               "cubed.tests.test_rechunk"]
NEED_DIAGNOSTICS = "not era5 and not rechunk_and_store and not plan_viz"


@pytest.mark.slow
def test_cubeds_own_storage_tests_pass_on_zarrcore(tmp_path):
    env = dict(os.environ, ZARR_CODEC_PIPELINE__PATH=PATH, ZARRCORE_PIPELINE_FALLBACK="0")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
         *CUBED_TESTS, "-k", NEED_DIAGNOSTICS],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
