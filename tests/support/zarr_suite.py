"""zarr-python's own tests, run with its default codec pipeline and with zarrcore's
(selected through ZARR_CODEC_PIPELINE__PATH only), counted against each other.

    python tests/support/zarr_suite.py WORKDIR [TEST PATH ...]

The tests come from the source distribution of the installed zarr-python (its wheel has
none), fetched into WORKDIR with pip, as are the pytest plugins they need. Prints the counts
of each run and every test that passes with the default pipeline but not with zarrcore's; exits
1 when there is one. Run on subsets: the whole suite takes long.
"""
import glob
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

import zarr

PIPELINES = {"default": None, "zarrcore": "zarrcore.zarr_pipeline.ZarrcorePipeline"}
# (numpydoc: tests/test_api/test_synchronous.py reads docstrings with it.)
PLUGINS = ["pytest-asyncio==1.4.0", "pytest-benchmark==5.3.0", "numpydoc==1.11.0"]


def _fetch(workdir):
    """The directory of zarr-python's unpacked source distribution, and of the plugins."""
    version = zarr.__version__
    source = os.path.join(workdir, f"zarr-{version}")
    plugins = os.path.join(workdir, "plugins")
    pip = [sys.executable, "-m", "pip", "-q"]
    if not os.path.isdir(source):
        subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:", "-d", workdir,
                              f"zarr=={version}"], check=True)
        with tarfile.open(glob.glob(os.path.join(workdir, f"zarr-{version}.tar.gz"))[0]) as tar:
            tar.extractall(workdir, filter="data")
    if not os.path.isdir(plugins):
        subprocess.run(pip + ["install", "--no-deps", "--target", plugins] + PLUGINS,
                       check=True)
    return source, plugins


def _outcomes(path):
    """{test id: "passed", "failed" or "skipped"} of a JUnit XML report."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                break
            if child.tag == "skipped":
                outcome = "skipped"
        found[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return found


def main(workdir, tests):
    source, plugins = _fetch(os.path.abspath(workdir))
    results = {}
    for name, path in PIPELINES.items():
        env = {k: v for k, v in os.environ.items() if k != "ZARR_CODEC_PIPELINE__PATH"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugins, env.get("PYTHONPATH")]))
        if path:
            env["ZARR_CODEC_PIPELINE__PATH"] = path
        report = os.path.join(os.path.abspath(workdir), f"{name}.xml")
        # (The project's addopts name plugins not installed here: coverage, doctests.)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", "--benchmark-disable", "-o", "faulthandler_timeout=300",
                        f"--junit-xml={report}", *tests], cwd=source, env=env)
        results[name] = _outcomes(report)
    for name, found in results.items():
        counts = {o: sum(v == o for v in found.values()) for o in ("passed", "failed", "skipped")}
        print(f"{name}: " + ", ".join(f"{n} {o}" for o, n in counts.items()))
    lost = sorted(t for t, o in results["default"].items()
                  if o == "passed" and results["zarrcore"].get(t) != "passed")
    print(f"passed with the default pipeline, not with zarrcore's: {len(lost)}")
    for test in lost:
        print(f"  {test}: {results['zarrcore'].get(test, 'not run')}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:] or ["tests"]))
