"""The Python examples of the user guide (docs/guide/*.md) and of README.md run as shown.

The blocks of one page run in order in one namespace, in a temporary directory (their
relative paths land there). A block whose first line names a file (`# name.py`) is written to
that file, importable by the blocks after it, not run. A block right after a comment saying
`not run: why` (`% not run: ...` in MyST, `<!-- not run: ... -->` in Markdown) is skipped for
that reason: each such block is listed here by page, so none is skipped unnoticed. A block
that starts worker processes also runs as a saved script, as a reader would run it.
"""
import glob
import importlib
import os
import re
import sys
import threading
import time

import pytest

from zarrcore.storage import MemoryStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = sorted(glob.glob(os.path.join(ROOT, "docs", "guide", "*.md"))) + [
    os.path.join(ROOT, "README.md")]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.S | re.M)
NOT_RUN = re.compile(r"^(?:% not run|<!-- not run)[^:\n]*: (.+?)(?: -->)?$")
# What pages import from the extras (xarray, dask, zarr-python, Ray, Cubed) or PyTorch: without
# it they skip.
OPTIONAL = {"xarray", "dask", "zarr", "torch", "ray", "cubed"}
FILE_BLOCK = re.compile(r"^(?:#|/\*) (\w+\.\w+)")
# What in a block starts worker processes: such a block also runs as a saved script.
STARTS_PROCESSES = re.compile(
    r"\b(?:multiprocessing|ProcessPoolExecutor|DataLoader|forkserver)\b|scheduler=.processes")
MAIN_GUARD = 'if __name__ == "__main__":'
# Seconds such a script may run (a hang, as of spawned workers that run it again, fails).
SCRIPT_TIMEOUT = 180


def python_blocks(path):
    """[(code, reason or None, file name or None)] of the page's Python blocks, in order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        not_run = NOT_RUN.match(before)
        named = FILE_BLOCK.match(match.group(2))
        blocks.append((match.group(2), not_run.group(1) if not_run else None,
                       named.group(1) if named else None))
    return blocks


def page_id(path):
    return os.path.relpath(path, ROOT)


# (page, index among its python_blocks) of each block that starts worker processes.
PROCESS_EXAMPLES = [(path, k) for path in PAGES if os.path.exists(path)
                    for k, (code, _, name) in enumerate(python_blocks(path))
                    if name is None and STARTS_PROCESSES.search(code)]


def run_blocks(path, blocks, tmp_path, monkeypatch):
    """Run `blocks` (python_blocks(path)'s) as the page's examples run, in `tmp_path`: in one
    namespace named "__main__", as a script's or a notebook's is (what a script keeps under
    the __main__ guard runs too); skips where they need what is not installed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace = {"__name__": "__main__"}
    ran = 0
    for code, not_run, name in blocks:
        if name is not None and name.endswith(".py") and not_run is None:
            (tmp_path / name).write_text(code)
        elif not_run is None:
            try:
                exec(compile(code, f"{page_id(path)} block {ran + 1}", "exec"), namespace)
            except ModuleNotFoundError as e:
                if e.name not in OPTIONAL:
                    raise
                pytest.skip(f"the page's examples need {e.name}, which is not installed")
            ran += 1
    for module in [m for m in sys.modules if os.path.dirname(
            getattr(sys.modules[m], "__file__", None) or "") == str(tmp_path)]:
        del sys.modules[module]  # the page's own modules go with its directory


@pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "docs", "guide")),
                    reason="the docs are not shipped with the package")
@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_page_examples_run(path, tmp_path, monkeypatch):
    run_blocks(path, python_blocks(path), tmp_path, monkeypatch)


def test_pages_have_examples_and_say_why_others_do_not_run():
    for path in PAGES:
        blocks = python_blocks(path)
        assert all(reason.strip() for _, reason, _ in blocks if reason is not None), path
    guide = {page_id(p): python_blocks(p) for p in PAGES}
    runnable = sum(1 for blocks in guide.values() for _, reason, _ in blocks if reason is None)
    assert runnable >= 20, "the guide's examples are meant to run"
    assert len(PROCESS_EXAMPLES) >= 2, "the examples that start workers (performance.md)"


@pytest.mark.slow
@pytest.mark.parametrize("path, index", PROCESS_EXAMPLES,
                         ids=[f"{page_id(p)}-block-{k + 1}" for p, k in PROCESS_EXAMPLES])
def test_examples_that_start_processes_run_as_saved_scripts(path, index, tmp_path,
                                                             monkeypatch):
    """Each example that starts worker processes, saved as a script after the page's examples
    before it (which make its files and data) and run by python, exits 0: a spawned or
    forkserver worker imports the script, so its work must be under the __main__ guard,
    which forked workers (Linux's default before Python 3.14) never show missing."""
    import signal
    import subprocess

    blocks = python_blocks(path)
    code = blocks[index][0]
    assert MAIN_GUARD in code, "a spawned worker would run the script's work again"
    for module in sorted(set(re.findall(r"^(?:from|import) (\w+)", code, re.M)) & OPTIONAL):
        pytest.importorskip(module, reason=f"the example needs {module}, which is not installed")
    run_blocks(path, blocks[:index], tmp_path, monkeypatch)
    (tmp_path / "example.py").write_text(code)
    script = subprocess.Popen([sys.executable, "example.py"], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        output, _ = script.communicate(timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(script.pid, signal.SIGKILL)  # (its workers too)
        output, _ = script.communicate()
        pytest.fail(f"still running after {SCRIPT_TIMEOUT} s:\n{output[-5000:]}")
    assert script.returncode == 0, output[-5000:]


@pytest.mark.slow
def test_map_style_dataset_recipe_in_worker_processes(tmp_path, monkeypatch):
    """The training loader recipe (docs/guide/performance.md) in a spawned pool and a forked
    one, each worker opening the array itself."""
    import multiprocessing

    import numpy as np

    import zarrcore

    path = os.path.join(ROOT, "docs", "guide", "performance.md")
    if not os.path.exists(path):
        pytest.skip("the docs are not shipped with the package")
    (recipe,) = [code for code, _, name in python_blocks(path) if name == "zarr_dataset.py"]
    (tmp_path / "zarr_dataset.py").write_text(recipe)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    import zarr_dataset

    try:
        x = zarrcore.create_array("s.zarr", name="x", shape=(40, 3, 3), dtype="int32",
                                  chunks=(1, 3, 3), shards=(10, 3, 3))
        x[...] = np.arange(x.size, dtype="int32").reshape(x.shape)
        ds = zarr_dataset.ZarrSamples("s.zarr", "x")
        assert len(ds) == 40 and ds._array is not None
        methods = ["spawn"] + (["fork"] if "fork" in multiprocessing.get_all_start_methods()
                               else [])
        for method in methods:
            with multiprocessing.get_context(method).Pool(2) as pool:
                got = pool.map(ds.__getitem__, [0, 39, 7, 7])
            for sample, i in zip(got, [0, 39, 7, 7]):
                np.testing.assert_array_equal(sample, x[i])
    finally:
        del sys.modules["zarr_dataset"]



class _GatedStore(MemoryStore):
    """A memory store whose chunk reads, once `counting`, are counted (`reads`; `reading`
    set at the first), wait until `gate` is set and take 10 ms each (so that a read stopped
    as its first chunks arrive is seen to stop: MemoryStore.get_many reads key by key)."""

    def __init__(self):
        super().__init__()
        self.counting, self.reads, self._counted = False, 0, threading.Lock()
        self.reading, self.gate = threading.Event(), threading.Event()

    def get(self, key, start=None, stop=None):
        if self.counting and not key.endswith("zarr.json"):
            with self._counted:
                self.reads += 1
            self.reading.set()
            self.gate.wait(60)
            time.sleep(0.01)
        return super().get(key, start, stop)


@pytest.mark.slow
def test_tile_server_cancels_the_read_of_a_client_that_disconnects(monkeypatch):
    """The async guide's aiohttp tile server, run with its own settings (on a port the system
    picks), its array in a store whose chunk reads wait for the test: it listens on
    127.0.0.1 and serves a tile; a client that disconnects mid-read cancels its handler, and
    the read stops between chunks."""
    import asyncio

    import numpy as np

    import zarrcore
    import zarrcore.asynchronous as zca

    web = pytest.importorskip("aiohttp.web", reason="aiohttp (the test extra) is not installed")
    path = os.path.join(ROOT, "docs", "guide", "async.md")
    if not os.path.exists(path):
        pytest.skip("the docs are not shipped with the package")
    (server,) = [code for code, _, _ in python_blocks(path) if "web.run_app" in code]
    store = _GatedStore()
    image = zarrcore.create_array(store, shape=(512, 512), dtype="uint16", chunks=(16, 16))
    image[...] = data = np.arange(image.size, dtype="uint16").reshape(image.shape)
    chunks_of_a_tile = (256 // 16) ** 2
    opened = zca.open_array
    monkeypatch.setattr(zca, "open_array", lambda path, **kwargs: opened(store, **kwargs))
    run = {}
    monkeypatch.setattr(web, "run_app", lambda app, **settings: run.update(settings, app=app))
    exec(compile(server, "async.md's tile server", "exec"), {"__name__": "__main__"})
    assert run["host"] == "127.0.0.1"
    assert run["handler_cancellation"] is True
    app = run.pop("app")
    handled = []  # [request, how its handler ended: None while it runs] of each request

    @web.middleware
    async def observed(request, handler):
        handled.append(entry := [request, None])
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            entry[1] = "cancelled"
            raise
        entry[1] = "answered"
        return response

    app.middlewares.append(observed)

    async def until(condition):
        for _ in range(6000):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("timed out")

    async def request(port, y, x):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /tiles/{y}/{x} HTTP/1.1\r\nHost: tiles\r\n"
                     f"Connection: close\r\n\r\n".encode())
        return reader, writer

    async def serve():
        runner = web.AppRunner(app, **{k: v for k, v in run.items() if k not in ("host", "port")})
        await runner.setup()
        try:
            await web.TCPSite(runner, run["host"], 0).start()
            port = runner.addresses[0][1]
            reader, writer = await request(port, 1, 1)
            answer = await asyncio.wait_for(reader.read(), 60)
            writer.close()
            head, body = answer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert body == np.ascontiguousarray(data[256:, 256:]).tobytes()

            store.counting = True
            reader, writer = await request(port, 0, 0)
            assert await asyncio.to_thread(store.reading.wait, 60)
            writer.close()  # mid-read: its chunk reads wait for the gate
            await writer.wait_closed()
            await until(lambda: handled[-1][0].transport is None)  # the server saw it go
            await asyncio.sleep(0.1)  # (a cancelled handler stops its read at once)
            store.gate.set()
            await until(lambda: handled[-1][1] is not None)
            assert [outcome for _, outcome in handled] == ["answered", "cancelled"]
            assert store.reads < chunks_of_a_tile
        finally:
            store.gate.set()
            await runner.cleanup()

    asyncio.run(serve())
