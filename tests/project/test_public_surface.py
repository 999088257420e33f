"""The package's public surface is explicit: every module of zarrcore (compiled ones too)
either declares `__all__`, listing exactly its public names, or is private by name (its own
name, or that of a package above it, starts with an underscore). A public name is one that
does not start with an underscore: each one a module defines (a class, a function, a
constant, a type alias, a TypeVar) is in its `__all__`, and every name there exists."""
import ast
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "zarrcore")

needs_sources = pytest.mark.skipif(not os.path.isdir(PACKAGE),
                                   reason="needs the source tree's zarrcore/")


def package_modules():
    """{dotted name: the file whose source tells its names} of the package's modules: a
    Python module's own file, a compiled module's type stub (.pyi, kept in step with it)."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            stem, ext = os.path.splitext(name)
            if ext not in (".py", ".pyx") or "__pycache__" in folder:
                continue
            path = os.path.join(folder, name if ext == ".py" else stem + ".pyi")
            dotted = os.path.relpath(os.path.join(folder, stem), ROOT).replace(os.sep, ".")
            found[dotted.removesuffix(".__init__")] = path
    return found


def is_private(dotted):
    return any(part.startswith("_") for part in dotted.split(".")[1:])


def _for_type_checkers(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _bound(statements, defined, imported, stub=False):
    """Add to `defined` the names the module-level `statements` define (in every branch of
    an `if` or `try`, not for type checkers only; in a `stub`, annotated ones too), to
    `imported` those they import."""
    for node in statements:
        if _for_type_checkers(node):
            _bound(node.orelse, defined, imported, stub)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if node.value is not None or stub else [])
            for target in targets:
                elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                defined |= {e.id for e in elements if isinstance(e, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):
            for part in (node.body, node.orelse, getattr(node, "finalbody", []),
                         *[h.body for h in getattr(node, "handlers", [])]):
                _bound(part, defined, imported, stub)


def public_definitions(source, stub=False):
    """The public names the module-level code of `source` (a type stub's with `stub`)
    defines; not those it imports (a stand-in assigned where an optional import fails is
    that import's), nor `__all__`."""
    defined, imported = set(), set()
    _bound(ast.parse(source).body, defined, imported, stub)
    return {n for n in defined - imported if not n.startswith("_")}


def declared(source):
    """The names of the literal `__all__` of `source` (a starred part, as `*m.__all__`, is
    left out); None where it declares none."""
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return [ast.literal_eval(e) for e in node.value.elts
                    if not isinstance(e, ast.Starred)]
    return None


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _imported(dotted):
    """The module `dotted`, imported; None where it needs an optional package this Python
    has not (its names are then read from its source only)."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as error:
        if (error.name or "").startswith("zarrcore"):
            raise
        return None


def test_the_reader_sees_definitions_and_declarations():
    source = (
        "from typing import TYPE_CHECKING, TypeVar\nimport numpy as np\n"
        "try:\n    import fcntl\nexcept ImportError:\n    fcntl = None\n"
        "if TYPE_CHECKING:\n    Alias = int\nelse:\n    Shown = int\n"
        "__all__ = ['f', 'C', *np.__all__]\n_T = TypeVar('_T')\nT = TypeVar('T')\n"
        "LIMIT: int = 4\nhint: int\nA, B = 1, 2\ndef f(): pass\nclass C:\n    inner = 1\n"
        "def _g(): pass\n")
    assert public_definitions(source) == {"Shown", "T", "LIMIT", "A", "B", "f", "C"}
    assert public_definitions(source, stub=True) == {"Shown", "T", "LIMIT", "hint", "A", "B",
                                                     "f", "C"}
    assert declared(source) == ["f", "C"]
    assert declared("x = 1\n") is None


@needs_sources
def test_the_walk_sees_python_packages_and_compiled_modules():
    modules = package_modules()
    assert {"zarrcore", "zarrcore.engine", "zarrcore.engine.routes", "zarrcore.kernels",
            "zarrcore._native.cache"} <= set(modules)
    assert modules["zarrcore.kernels"].endswith("kernels.pyi")
    assert is_private("zarrcore._native.cache") and is_private("zarrcore.runtime._aio")
    assert not is_private("zarrcore.engine") and not is_private("zarrcore")


@needs_sources
@pytest.mark.parametrize("dotted", sorted(m for m in package_modules() if not is_private(m)))
def test_a_public_module_lists_exactly_its_public_names(dotted):
    path = package_modules()[dotted]
    source = _read(path)
    module = _imported(dotted)
    names = declared(source)
    assert names is not None, f"{dotted} declares no __all__"
    if module is not None:
        names = list(module.__all__)
        missing = [n for n in names if not hasattr(module, n)]
    else:
        tree = ast.parse(source)
        bound, imported = set(), set()
        _bound(tree.body, bound, imported, path.endswith(".pyi"))
        missing = [n for n in names if n not in bound | imported]
    assert not missing, f"{dotted}.__all__ names what it has not: {missing}"
    assert len(set(names)) == len(names), f"{dotted}.__all__ repeats names"
    unlisted = public_definitions(source, path.endswith(".pyi")) - set(names)
    assert not unlisted, (f"{dotted} defines public names its __all__ leaves out: "
                          f"{sorted(unlisted)} (list them, or start them with an underscore)")
