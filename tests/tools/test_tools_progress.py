"""Progress lines in a real terminal (tmux), none elsewhere, and Ctrl-C leaving a resumable
conversion."""
import os
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import zarrcore
from zarrcore.tools.hierarchy import CONVERT_STATE_KEY

# Subprocesses import the zarrcore under test: the installed one, or an in-place build.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(zarrcore.__file__))
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "src.zarr"
    a = zarrcore.create_array(str(src), shape=(256, 256, 256), dtype="u2", chunks=(32, 32, 32),
                              zarr_format=2, compressors={"id": "blosc", "cname": "lz4", "clevel": 1})
    a[:] = np.random.default_rng(5).integers(0, 4000, (256, 256, 256), dtype="u2")
    return src


def _cli(*args):
    return (f"ZARRCORE_NUM_THREADS=1 PYTHONPATH={shlex.quote(PACKAGE_PARENT)} "
            f"{shlex.quote(sys.executable)} -m zarrcore.cli " + " ".join(map(shlex.quote, args)))


class Tmux:
    def __init__(self, name):
        self.name = name

    def run(self, command):
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "150", "-y", "20",
                        command + "; echo EXIT=$?; sleep 30"], check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait_for(self, predicate, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"screen never matched:\n{self.screen()}")

    def kill(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.fixture
def tmux(request):
    t = Tmux(f"zc-{os.getpid()}-{request.node.name}"[:60])
    yield t
    t.kill()


@pytest.mark.slow
@needs_tmux
def test_bar_in_a_terminal_and_ctrl_c_resumes(source, tmp_path, tmux):
    dst = tmp_path / "dst.zarr"
    tmux.run(_cli("convert", str(source), str(dst), "--zarr-format", "3", "--chunks", "32,32,32",
                  "--shards", "64,64,64", "--compressor", "zstd:19"))
    # The bar: percentage, bytes done of the total, throughput, ETA and shards done.
    bar = tmux.wait_for(lambda s: "convert:" in s and "B/s" in s and "/64 shards" in s)
    line = next(line for line in bar.splitlines() if "convert:" in line)
    assert "%" in line and "32.0 MiB" in line and "<" in line, line  # ETA after "<"
    tmux.wait_for(lambda s: any(f" {n}/64 shards" in s for n in range(1, 63)))
    subprocess.run(["tmux", "send-keys", "-t", tmux.name, "C-c"], check=True)
    text = tmux.wait_for(lambda s: "EXIT=" in s)
    assert "interrupted; run it again with --resume" in text and "EXIT=130" in text
    assert "Traceback" not in text
    assert (dst / CONVERT_STATE_KEY).exists()
    done = subprocess.run(_cli("convert", "-q", str(source), str(dst), "--zarr-format", "3",
                               "--chunks", "32,32,32", "--shards", "64,64,64",
                               "--compressor", "zstd:19", "--resume", "--json"),
                          shell=True, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert '"objects_kept": 0' not in done.stdout  # the shards written before Ctrl-C were kept
    assert not (dst / CONVERT_STATE_KEY).exists()
    np.testing.assert_array_equal(zarrcore.open_array(str(dst))[...],
                                  zarrcore.open_array(str(source))[...])


@pytest.mark.slow
@needs_tmux
def test_quiet_means_no_bar_in_a_terminal(source, tmp_path, tmux):
    tmux.run(_cli("verify", "-q", str(source)))
    text = tmux.wait_for(lambda s: "EXIT=" in s)
    assert "verify:" not in text and "no damage found" in text and "EXIT=0" in text


@pytest.mark.slow
def test_no_bar_off_a_terminal(source, tmp_path):
    out = subprocess.run(_cli("copy", str(source), str(tmp_path / "c.zarr")), shell=True,
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "" and "copied" in out.stdout


def _last_line(stderr):
    return stderr.rstrip("\n").split("\r")[-1]


def test_line_drawn_without_tqdm(source, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed
    zarrcore.convert(str(source), str(tmp_path / "c.zarr"), chunks=(64, 64, 64), progress=True)
    err = capsys.readouterr().err
    line = _last_line(err)
    assert err.endswith("\n") and line.startswith("convert: 100% 32.0 MiB/32.0 MiB [")
    assert "B/s]" in line and line.endswith(" 64/64 chunks"), line


def test_copy_resume_line_ends_at_100_percent(source, tmp_path, capsys):
    dst = tmp_path / "c.zarr"
    zarrcore.copy(str(source), str(dst), progress=False)
    for name in sorted(os.listdir(dst))[:3]:  # a copy cut short: some chunks missing
        if name[0].isdigit():
            os.remove(dst / name)
    report = zarrcore.copy(str(source), str(dst), resume=True, progress=True)
    assert report.keys >= 3 and report.skipped > 0
    line = _last_line(capsys.readouterr().err)
    assert line.startswith("copy: 100% ") and "<00:00," in line, line
