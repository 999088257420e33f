"""Type check and lint: mypy over the package and over typing_usage.py, which uses the public
API as a user would, and ruff over the package as pyproject.toml configures it. Any type
error or lint finding fails the test. The cache lives under the temporary directory: a
first run takes about 20-40 s, later runs about a second."""
import ast
import enum
import getpass
import importlib
import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("mypy", reason="mypy is not installed (it is in the `test` extra)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mypy.build").origin.endswith(".py"),
    reason="mypy is not compiled for this interpreter (none is for a free-threaded one): "
           "interpreted it takes minutes, and the same check runs compiled in `make test`")
def test_mypy_package_and_usage():
    cache = os.path.join(tempfile.gettempdir(), f"zarrcore-mypy-cache-{getpass.getuser()}")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "pyproject.toml"),
         "--cache-dir", cache, "--no-error-summary", "--hide-error-context",
         "zarrcore", os.path.join("tests", "support", "typing_usage.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_spelling_is_clean():
    """codespell over code, tests and docs, as `make lint` runs it (pyproject.toml's
    [tool.codespell] lists the identifiers it would flag)."""
    pytest.importorskip("codespell_lib", reason="codespell is not installed (the `lint` extra)")
    paths = ["zarrcore", "csrc", "tests", "docs", "benchmarks", "wheels", "README.md", "setup.py"]
    result = subprocess.run([sys.executable, "-m", "codespell_lib", *paths], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


# -- stubs of the compiled modules -------------------------------------------------------------
def _stub(module):
    """The top-level statements of `module`'s stub (zarrcore/NAME.pyi, zarrcore/_native/...)."""
    with open(os.path.join(ROOT, *module.__name__.split(".")) + ".pyi", encoding="utf-8") as f:
        return ast.parse(f.read()).body


def _declared(statements):
    """{name: statement} of the functions, classes and annotated names the stub declares (an
    overloaded function by its first declaration)."""
    found = {}
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.setdefault(node.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, node)
        elif isinstance(node, ast.Assign):
            found.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    return found


def _parameters(function):
    """A stub function's parameter names, in order, with their kinds' markers."""
    args = function.args
    names = [a.arg for a in args.posonlyargs] + (["/"] if args.posonlyargs else [])
    names += [a.arg for a in args.args]
    names += ["*" + args.vararg.arg] if args.vararg else (["*"] if args.kwonlyargs else [])
    names += [a.arg for a in args.kwonlyargs]
    return names + (["**" + args.kwarg.arg] if args.kwarg else [])


def _runtime_parameters(obj):
    """The same of a compiled function or method; None when it has no signature."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names, kinds = [], [p.kind for p in signature.parameters.values()]
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in names and p.VAR_POSITIONAL not in kinds:
            names.append("*")
        names.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
        if p.kind is p.POSITIONAL_ONLY and (len(names) == len(kinds) or
                                            kinds[len(names)] is not p.POSITIONAL_ONLY):
            names.append("/")
    return names


_COMPILED = [*(f"_native.{name}" for name in (
    "batch", "chunk_jobs", "compress", "files", "filters", "indexing", "memory", "memstore",
    "shard_io", "status")), "array_api", "kernels"]


@pytest.mark.parametrize("name", _COMPILED)
def test_stubs_declare_what_the_compiled_modules_define(name):
    module = importlib.import_module(f"zarrcore.{name}")
    declared = _declared(_stub(module))
    # Every public function and class defined in the module is declared, and nothing else.
    defined = {n for n, v in vars(module).items()
               if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
               and (inspect.isclass(v) or callable(v))}
    assert defined <= set(declared), sorted(defined - set(declared))
    # (names with a leading underscore are the stub's own aliases)
    assert not [n for n in declared if not n.startswith("_") and not hasattr(module, n)]
    problems = []
    for n, node in declared.items():
        if n.startswith("_"):
            continue
        if isinstance(node, ast.FunctionDef):
            runtime = _runtime_parameters(getattr(module, n))
            if runtime is not None and runtime != _parameters(node):
                problems.append((n, runtime, _parameters(node)))
        if not isinstance(node, ast.ClassDef) or issubclass(getattr(module, n), enum.Enum):
            continue
        cls = getattr(module, n)
        members = _declared(node.body)
        public = {m for m in vars(cls) if not m.startswith("_")}
        problems += [(n, m, "not declared") for m in sorted(public - set(members))]
        problems += [(n, m, "not defined") for m in members
                     if not m.startswith("__") and not hasattr(cls, m)]
        for m, member in members.items():
            if isinstance(member, ast.FunctionDef) and not m.startswith("__"):
                runtime = _runtime_parameters(getattr(cls, m))
                if runtime is not None and runtime != _parameters(member):
                    problems.append((f"{n}.{m}", runtime, _parameters(member)))
    assert not problems, problems
