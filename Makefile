# Quick start: `make demo` and `make test` each make their own virtualenv and install zarrcore.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_DIR ?= build/demo.zarr

.PHONY: demo test docs sanitize fuzz bench wheel wincheck install-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

demo: $(PY)
	$(PY) -m pip install .
	$(VENV)/bin/zarrcore demo $(DEMO_DIR)
	$(VENV)/bin/zarrcore info $(DEMO_DIR)/temperature
	$(VENV)/bin/zarrcore tree $(DEMO_DIR)

install-test: $(PY)
	$(PY) -m pip install ".[test]"

test: install-test
	cd tests && ../$(VENV)/bin/python -m pytest -q -p no:cacheprovider

# The API reference, from the installed package's docstrings; warnings are errors.
docs: $(PY)
	$(PY) -m pip install ".[docs]"
	cd docs && ../$(VENV)/bin/python -m sphinx -W --keep-going -b html . ../build/docs/html

sanitize:
	.ci/sanitize

# FUZZ_SECONDS per harness (60 is the short run), FUZZ_HARNESSES to pick some; see .ci/fuzz.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) .ci/fuzz

bench: $(PY)
	$(PY) -m pip install ".[bench]"
	$(PY) benchmarks/run.py  # the `remote` group included (benchmarks/remote.py)
	$(PY) benchmarks/convert.py

wheel: $(PY)
	rm -rf build/lib.* build/temp.* build/bdist.*  # an in-tree build would ship stale files
	$(PY) -m pip wheel --no-deps -w wheels .
	$(PY) wheels/check_wheel.py wheels

# The Windows port of csrc/, checked from Linux: every file cross-compiled with MinGW-w64
# (warnings are errors) and the system layer run under Wine (wheels/README.md).
wincheck: $(PY)
	$(PY) -m pip install "blosc>=1.11"
	$(PY) wheels/wincheck.py --run

clean:
	rm -rf build *.egg-info zarrcore/*.c zarrcore/*.so wheels/*.whl docs/api/generated
