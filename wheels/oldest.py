"""The requirements of a build and test run against the oldest numpy and Cython that
pyproject.toml claims (`make oldest-test`, the workflow's `oldest` job), one per line.

    python wheels/oldest.py build   # build-system.requires, numpy and Cython at their minimums
    python wheels/oldest.py run     # the dependencies so pinned, and what the tests need

The tests need what the cibuildwheel override of musllinux and win32 wheels installs (the
test extra's packages that every platform has); the tests that need the rest skip.
"""
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OLDEST = ("numpy", "cython")
TESTS_SELECT = "*-musllinux_* *-win32"


def at_minimum(requirement):
    """`name>=X` as `name==X` for the packages of OLDEST; any other requirement unchanged."""
    found = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)", requirement.strip())
    if found and found.group(1).lower() in OLDEST:
        return f"{found.group(1)}=={found.group(2)}"
    return requirement


def requirements(which):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    if which == "build":
        return [at_minimum(r) for r in config["build-system"]["requires"]] + ["wheel"]
    (tests,) = [o for o in config["tool"]["cibuildwheel"]["overrides"]
                if o["select"] == TESTS_SELECT]
    runtime = [at_minimum(r) for r in config["project"]["dependencies"]]
    return runtime + [at_minimum(r) for r in tests["test-requires"]]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["build"], ["run"]):
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(requirements(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
