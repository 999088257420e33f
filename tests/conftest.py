"""Shared test setup.

CI installs zarrcore (`pip install .[test]`) and runs pytest from tests/, so `import zarrcore`
finds the installed package. A developer who built the extensions in place
(`python setup.py build_ext --inplace`) runs the same command from tests/, where the repo root is
not on sys.path: only then is it added, so an installed package always wins.

tests/ mirrors the package (tests/engine/ tests zarrcore/engine/, tests/bindings/ the compiled
modules, tests/face/ the top-level API, tests/project/ the packaging, docs and structure);
the helpers the tests share live in tests/support/, which is put on sys.path here, so a test
imports them by name (`from peers import peer`). The test folders are not packages: pytest
imports each test file by its own name, so two test files may not share a name (pytest stops at
collection if they do).
"""
import gc
import importlib.util
import os
import sys

import pytest

# The cyclic collector is off until collection ends: importing the suite (zarrcore, numpy,
# xarray, dask, zarr-python, the test modules) only adds objects that live for the whole run,
# and the collections their allocations set off walked them again and again (a worker's
# collection took 13.1-13.5 CPU-s here, 7.6-9.4 without them).
gc.disable()

from hypothesis import HealthCheck, settings  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
sys.path.insert(0, SUPPORT)

if importlib.util.find_spec("zarrcore") is None:
    sys.path.insert(0, ROOT)

import zarrcore  # noqa: E402
from zarrcore.runtime.config import LIMITS  # noqa: E402


def _asan_loaded():
    """Is AddressSanitizer's runtime in this process (.ci/sanitize preloads it)?"""
    try:
        with open("/proc/self/maps") as f:
            return any("libasan" in line for line in f)
    except OSError:
        return False


ASAN = _asan_loaded()

# How long property tests search, in one place: HYPOTHESIS_PROFILE=quick for a fast inner
# loop, =thorough for a long search. No deadline and no too_slow check: an example's time
# depends on the machine's load. A test's own settings say only which health checks its
# property needs suppressed (its list replaces the profile's, so it names too_slow as well).
for _name, _examples in (("default", 100), ("quick", 10), ("thorough", 2000)):
    settings.register_profile(_name, max_examples=_examples, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: compiles, starts a server, a cluster or processes, or kills them; "
                   "`pytest -m 'not slow'` leaves such tests out")
    config.addinivalue_line(
        "markers", "measures_memory: asserts on RSS, which AddressSanitizer's shadow memory inflates")
    config.addinivalue_line(
        "markers", "checks_linking: asserts on how the extensions link, which a sanitized build changes")
    config.addinivalue_line(
        "markers", "posix(reason): needs what only POSIX systems have (the reason); skipped on Windows")


# Fixtures that start a server or a cluster: every test using one is `slow`.
SLOW_FIXTURES = ("moto_server", "cluster_client")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(name in SLOW_FIXTURES for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    # Files with slow tests first, so that the suite ends on short files rather than waiting
    # for a long one that began late. pytest-xdist hands files out in this order under
    # `make test`'s --no-loadscope-reorder; by default it sorts them by their number of tests,
    # which left the long few (the model checker, the docs build, Wine) to the end.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
    if sys.platform == "win32":
        for item in items:
            marker = item.get_closest_marker("posix")
            if marker:
                item.add_marker(pytest.mark.skip(reason=f"POSIX only: {marker.args[0]}"))
    if not ASAN:
        return
    reasons = {
        "measures_memory": "AddressSanitizer's shadow memory and quarantine inflate RSS",
        "checks_linking": "a sanitized build links the sanitizer runtimes",
    }
    for item in items:
        for name, reason in reasons.items():
            if item.get_closest_marker(name):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    yield
    # What collection imported lives for the whole run: frozen out of the cyclic collector,
    # whose full collections then stop walking it (4 files of many small tests took 6-8% less
    # CPU here), and the collector turned back on. pytest-xdist's controller collects nothing
    # and gets here too.
    gc.collect()
    gc.freeze()
    gc.enable()


@pytest.fixture(autouse=True)
def _restore_config():
    """Tests may change zarrcore.config; put it back afterwards, and which options are set
    rather than at their defaults (Config.chose) too."""
    cfg = zarrcore.config
    saved = {name: getattr(cfg, name) for name in (
        "num_threads", "write_empty_chunks", "array_order", "shard_write_order",
        "buffer_pool_bytes", "confine_local_stores", *LIMITS)}
    chosen = set(cfg._chosen)
    yield
    cfg.set(**saved)
    cfg._chosen = chosen


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    """A fresh, empty store of each kind."""
    if request.param == "memory":
        return zarrcore.MemoryStore()
    return zarrcore.LocalStore(tmp_path / "store")


@pytest.fixture
def disk_path(tmp_path):
    """A directory on a disk's file system (with a page cache to drop): `tmp_path`, unless
    that is on tmpfs (as `make test` keeps it); skips where no such directory can be made."""
    import shutil
    from pathlib import Path

    import file_systems

    if not file_systems.on_tmpfs(tmp_path):
        yield tmp_path
        return
    path = file_systems.new_disk_dir()
    if path is None:
        pytest.skip("every place for a temporary directory is on tmpfs")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def shm_path(disk_path):
    """A directory on /dev/shm (tmpfs, never `disk_path`'s file system), or None where there is
    none."""
    import shutil
    import tempfile
    from pathlib import Path

    import file_systems

    if not os.path.isdir(file_systems.SHM):
        yield None
        return
    path = tempfile.mkdtemp(prefix="zarrcore-", dir=file_systems.SHM)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster_client():
    """A dask Client of a LocalCluster of 2 worker processes (one thread each), one per test
    module; not the default scheduler. The workers import the zarrcore under test."""
    distributed = pytest.importorskip("distributed", reason="the distributed scheduler is not installed")
    saved = os.environ.get("PYTHONPATH")
    root = os.path.dirname(os.path.dirname(zarrcore.__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, saved]))
    # No statistical profiler: it reads the other threads' frames (sys._current_frames), which
    # on a free-threaded CPython 3.13 is a use-after-free (python/cpython#152355) that crashed
    # `make ft-test`. The workers get the parent's config.
    import dask

    no_profiler = dask.config.set({"distributed.worker.profile.enabled": False})
    try:
        with no_profiler, distributed.LocalCluster(processes=True, n_workers=2,
                                                   threads_per_worker=1,
                                                   dashboard_address=None) as cluster:
            with distributed.Client(cluster, set_as_default=False) as client:
                yield client
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture(params=["threads", pytest.param("distributed", marks=pytest.mark.slow)])
def dask_scheduler(request):
    """Runs the test under dask's threaded scheduler, then under `cluster_client`."""
    dask = pytest.importorskip("dask", reason="dask is not installed")
    chosen = request.getfixturevalue("cluster_client") if request.param == "distributed" else "threads"
    with dask.config.set(scheduler=chosen):
        yield request.param


# -- local servers for store tests (tests/support/servers.py) ----------------------------------
@pytest.fixture(scope="session")
def moto_server():
    """moto's S3 server on 127.0.0.1, one per session; `new_bucket()` gives each test its own."""
    pytest.importorskip("moto.server", reason="moto's server (the test extra) is not installed")
    from servers import MotoServer

    server = MotoServer()
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(moto_server):
    """(server, name) of a new, empty bucket on the session's moto server."""
    return moto_server, moto_server.new_bucket()


@pytest.fixture(scope="session")
def _http_server(tmp_path_factory):
    from servers import RangeHTTPServer

    server = RangeHTTPServer(str(tmp_path_factory.mktemp("http-root")))
    yield server
    server.stop()


@pytest.fixture
def http_server(_http_server):
    """An HTTP server of the directory `root`, with byte ranges and settable `faults`
    (cleared after each test)."""
    _http_server.reset()
    yield _http_server
    _http_server.reset()


@pytest.fixture
def fault_proxy(moto_server):
    """A proxy in front of the moto server whose `faults` a test sets."""
    from servers import FaultProxy

    proxy = FaultProxy(moto_server.port)
    yield proxy
    proxy.stop()


@pytest.fixture
def counted(s3_bucket):
    """(server, bucket, proxy): a new bucket and a proxy in front of the moto server that
    counts requests."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    from servers import CountingProxy

    server, bucket = s3_bucket
    proxy = CountingProxy(server.port)
    yield server, bucket, proxy
    proxy.stop()


@pytest.fixture
def io_config():
    """Restores the remote I/O settings a test changes with config.set."""
    names = ("io_concurrency", "io_process_concurrency", "io_timeout", "io_retries")
    saved = {name: getattr(zarrcore.config, name) for name in names}
    yield zarrcore.config
    zarrcore.config.set(**saved)


@pytest.fixture(scope="module")
def check_wheel():
    """wheels/check_wheel.py, imported as a module."""
    spec = importlib.util.spec_from_file_location(
        "check_wheel", os.path.join(ROOT, "wheels", "check_wheel.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
