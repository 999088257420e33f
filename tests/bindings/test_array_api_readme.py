"""The Cython and C examples of the guide's compiled code page (docs/guide/compiled.md) build
and run as shown."""
import os
import re
import subprocess
import sys

import pytest
from compilers import c_compiler

import zarrcore

pytest.importorskip("Cython")

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "docs", "guide", "compiled.md")


def page_blocks():
    """The fenced code blocks of the page's array API section, by the file name each names on
    its first line (the last, unnamed one is the usage)."""
    text = open(PAGE, encoding="utf-8").read()
    section = text[text.index("### Building against it"):]
    blocks = {}
    for body in re.findall(r"```\w*\n(.*?)```", section, re.S):
        first = body.splitlines()[0]
        name = re.match(r"(?:#|/\*) (\w+\.\w+)", first)
        blocks[name.group(1) if name else "usage.py"] = body
    return blocks


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(PAGE), reason="the docs are not shipped with the package")
def test_compiled_code_examples_build_and_run(tmp_path):
    if c_compiler() is None:
        pytest.skip("no C compiler here to build the examples")
    blocks = page_blocks()
    assert {"scale.pyx", "setup_scale.py", "rowsum.c", "setup_rowsum.py", "usage.py"} <= set(blocks)
    for name, body in blocks.items():
        (tmp_path / name).write_text(body)
    # Built unoptimized (the last -O wins): the build is most of the test's time.
    env = dict(os.environ, CFLAGS=os.environ.get("CFLAGS", "") + " -O0", PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(zarrcore.__file__)), os.environ.get("PYTHONPATH", "")]))
    for setup in ("setup_scale.py", "setup_rowsum.py"):
        build = subprocess.run([sys.executable, setup, "build_ext", "--inplace"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=300)
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    run = subprocess.run([sys.executable, "usage.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.skipif(not os.path.exists(PAGE), reason="the docs are not shipped with the package")
def test_the_page_says_what_a_build_needs_installed():
    text = open(PAGE, encoding="utf-8").read()
    assert "pip install cython setuptools" in text[text.index("### Building against it"):]
