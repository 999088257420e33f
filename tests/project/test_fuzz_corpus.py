"""Replay the fuzz corpus (tests/support/fuzz/corpus/<harness>/: seeds, and every input the
fuzzers found) through the harnesses of tests/support/fuzz/harnesses.py: each must end in
success or a ZarrcoreError, within a second. `make fuzz` runs the same harnesses under
libFuzzer and ASan."""
import os
import sys
import time

import pytest

FUZZ = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "support", "fuzz")
sys.path.insert(0, FUZZ)

from harnesses import HARNESSES  # noqa: E402

INPUTS = [
    (harness, name)
    for harness in sorted(HARNESSES)
    for name in sorted(os.listdir(os.path.join(FUZZ, "corpus", harness)))
]


@pytest.mark.parametrize("harness, name", INPUTS, ids=[f"{h}/{n}" for h, n in INPUTS])
def test_corpus_input(harness, name):
    with open(os.path.join(FUZZ, "corpus", harness, name), "rb") as f:
        data = f.read()
    t = time.perf_counter()
    HARNESSES[harness](data)
    assert time.perf_counter() - t < 1
