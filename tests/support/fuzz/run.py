"""Run one harness of harnesses.py under atheris (libFuzzer), with zarrcore's Python code
instrumented for coverage (its compiled core is instrumented by the build; see .ci/fuzz):
    python tests/support/fuzz/run.py HARNESS [libFuzzer options] [CORPUS_DIR ...]
"""
import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["zarrcore", "harnesses"]):
    from harnesses import HARNESSES


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in HARNESSES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(HARNESSES)}}} [libFuzzer options] [corpus dirs]")
    harness = HARNESSES[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], harness)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
