"""Test built wheels as a user installs them (`make release-test`): for each interpreter, a
clean virtualenv, the matching wheel of DIST installed with what the tests need, and the
tests run from a directory outside the checkout, with zarrcore imported from site-packages.

    python wheels/test_wheels.py --dist DIST [--full TAG]... [--platform-tag T] PYTHON...

Interpreters of the --full tags (cp311...) run the whole suite with the `test` extra; the
others a named subset (SUBSET_FILES, with SUBSET_REQUIRES). Each run's interpreter, wheel, pytest summary and duration are
printed and appended to DIST/TESTS.txt. A free-threaded interpreter (cp313t) runs them with
PYTHON_GIL=0. PYTEST_ARGS (environment) passes more arguments.
"""
import argparse
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


# The subset: what tests the installed package's indexing, metadata, sharding, C API and
# packaging, with what installs everywhere (the chroots have no compiler or network); the
# whole suite runs on the --full interpreters, and on every wheel cibuildwheel builds.
SUBSET_REQUIRES = ["pytest>=7", "hypothesis>=6", "crc32c>=2.3", "cython>=3.0", "setuptools>=77",
                   "blosc>=1.11"]
SUBSET_FILES = ["indexing/test_indexing_basic.py", "indexing/test_indexing_modes.py",
                "nodes/test_resize_append.py", "nodes/test_metadata_updates.py",
                "engine/test_sharding_concurrency.py", "bindings/test_cimport.py",
                "project/test_packaging.py"]


def python_tag(python):
    """The interpreter's wheel tag: cp311, or cp313t for a free-threaded build."""
    out = subprocess.run([python, "-c", "import sys, sysconfig; v = sys.version_info; "
                          "print(f'cp{v[0]}{v[1]}' + "
                          "('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_one(python, wheel, full, log, where):
    tag = python_tag(python)
    with tempfile.TemporaryDirectory(prefix=f"zarrcore-wheel-{tag}-") as tmp:
        tmp = pathlib.Path(tmp)
        venv = tmp / "venv"
        subprocess.run([python, "-m", "venv", venv], check=True)
        vpy = venv / "bin" / "python"
        spec = f"{wheel}[test]" if full else str(wheel)
        # (--prefer-binary: the newest release with a wheel for this interpreter, e.g. a pure
        # Python hypothesis on 3.13t, whose newest releases are compiled and have no wheel there)
        subprocess.run([vpy, "-m", "pip", "install", "-q", "--prefer-binary",
                        "--only-binary", "zarrcore", spec,
                        *([] if full else SUBSET_REQUIRES)], check=True)
        work = tmp / "work"  # outside the checkout: nothing there shadows site-packages
        work.mkdir()
        installed = subprocess.run(
            [vpy, "-c", "import zarrcore, sysconfig; f = zarrcore.__file__; "
             "assert f.startswith(sysconfig.get_paths()['purelib']), f; print(f)"],
            cwd=work, capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run([vpy, ROOT / "wheels" / "check_wheel.py", "--installed"], cwd=work,
                       check=True)
        if tag.endswith("t"):
            # Every extension declares itself free-threading compatible: importing them all
            # leaves the GIL off (CPython turns it on, with a warning, for one that does not).
            subprocess.run(
                [vpy, "-W", "error", "-c", "import importlib, pathlib, sys, zarrcore; "
                 "root = pathlib.Path(zarrcore.__file__).parent; "
                 "[importlib.import_module('.'.join(('zarrcore', *so.relative_to(root).parent.parts, "
                 "so.name.split('.')[0]))) for so in root.rglob('*.so')]; "
                 "assert not sys._is_gil_enabled(), 'the GIL was enabled'"],
                cwd=work, check=True, env={k: v for k, v in os.environ.items()
                                           if k != "PYTHON_GIL"})
        tests = [str(ROOT / "tests")] if full else [str(ROOT / "tests" / f) for f in SUBSET_FILES]
        started = time.monotonic()
        # A free-threaded interpreter runs them with the GIL off whatever the test
        # requirements' extensions declare.
        env = dict(os.environ, **({"PYTHON_GIL": "0"} if tag.endswith("t") else {}))
        result = subprocess.run(
            [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
             *shlex.split(os.environ.get("PYTEST_ARGS", "")), *tests],
            cwd=work, capture_output=True, text=True, env=env)
        elapsed = time.monotonic() - started
    print(result.stdout[-6000:], result.stderr[-3000:], sep="\n")
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1].strip("= ")
    line = (f"{wheel.name} on {platform.machine()}, {where}, "
            f"{pathlib.Path(python).resolve()} ({tag}), zarrcore from {installed}: "
            f"{'whole suite' if full else 'subset ' + ' '.join(SUBSET_FILES)}: {summary} "
            f"[{elapsed:.0f} s wall]")
    print(line)
    with open(log, "a") as f:
        f.write(line + "\n")
    return result.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=pathlib.Path, required=True)
    parser.add_argument("--full", action="append", default=[], metavar="TAG",
                        help="interpreters (cp311...) that run the whole suite")
    parser.add_argument("--platform-tag", default="manylinux_2_17_" + platform.machine())
    parser.add_argument("--where", default=f"{platform.node()} ({platform.platform()})",
                        help="where the tests run, for the record")
    parser.add_argument("pythons", nargs="+")
    args = parser.parse_args(argv)
    failed = 0
    for python in args.pythons:
        tag = python_tag(python)
        wheels = sorted(args.dist.glob(
            f"zarrcore-*-{tag.rstrip('t')}-{tag}-*{args.platform_tag}*.whl"))
        if len(wheels) != 1:
            sys.exit(f"{args.dist}: expected one {tag} {args.platform_tag} wheel, found "
                     f"{[w.name for w in wheels]}")
        failed |= run_one(python, wheels[0].resolve(), tag in args.full,
                          args.dist / "TESTS.txt", args.where)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
