"""Every dotted zarrcore name the documentation gives (README.md, docs/ with its guide and API
pages, the package's docstrings, its compiled modules' too) imports or resolves, without a DeprecationWarning; and the modules kept where
names were documented before they moved still give those names, each with a warning that
says where the name is now."""
import ast
import glob
import importlib
import os
import re
import warnings

import pytest

import zarrcore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.dirname(zarrcore.__file__)

needs_docs = pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "docs")),
                                reason="the docs are not shipped with the package")

# A name in text ("via-zarrcore.zarr" names a file, not a module).
DOTTED = re.compile(r"(?<![\w./-])zarrcore(?:\.[A-Za-z_]\w*)+")
# reStructuredText: the module its relative names are in, and the directives and roles
# naming objects.
RST_MODULE = re.compile(r"^\.\. (?:currentmodule|module|automodule):: (\S+)")
RST_OBJECT = re.compile(r"^\.\. auto(?:class|function|data|attribute|method|exception):: (\S+)")
RST_ROLE = re.compile(r":(?:class|func|meth|attr|data|exc|mod|obj):`~?([\w.]+)`")

# Names documented at earlier commits, in modules since moved: {old name: where it is now}.
MOVED = {
    "zarrcore.array.ArrayInfo": "zarrcore.nodes.info.ArrayInfo",
    "zarrcore.array.Array": "zarrcore.nodes.array.Array",
    "zarrcore.array_chunks.ChunkMethods": "zarrcore.nodes.array_chunks.ChunkMethods",
    "zarrcore.views.LazyArray": "zarrcore.nodes.views.LazyArray",
    "zarrcore.views.IndexTransform": "zarrcore.nodes.views.IndexTransform",
    "zarrcore.indexing.BasicIndexer": "zarrcore.metadata.indexing.BasicIndexer",
    "zarrcore._types.StoreLike": "zarrcore.metadata.types.StoreLike",
}


def _rst_names(text):
    """The objects an .rst page names: in its text, its auto* directives and autosummary
    lists and its roles, relative names taken in the current module."""
    names, module, in_autosummary = set(), "zarrcore", False
    for line in text.splitlines():
        if line and not line[0].isspace():
            in_autosummary = line.startswith(".. autosummary::")
            if found := RST_MODULE.match(line):
                module = found.group(1)
                names.add(module)
            elif found := RST_OBJECT.match(line):
                names.add(f"{module}.{found.group(1)}")
        elif in_autosummary and line.strip() and not line.strip().startswith(":"):
            names.add(f"{module}.{line.strip()}")
        names |= {target if target.startswith("zarrcore.") else f"{module}.{target}"
                  for target in RST_ROLE.findall(line)}
    return names


def _docstrings(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield ast.get_docstring(node) or ""


# A docstring of a compiled module's source (.pyx, .pxd) or stub (.pyi): triple-quoted.
TRIPLE_QUOTED = re.compile(r'"""(.*?)"""', re.DOTALL)


def _compiled_docstrings(path):
    with open(path, encoding="utf-8") as f:
        return TRIPLE_QUOTED.findall(f.read())


def documented_names():
    """{name: [files naming it]} over README.md, docs/ and the package's docstrings (those of
    its compiled modules from the source tree, where there is one)."""
    found = {}

    def add(names, where):
        for name in names:
            found.setdefault(name, []).append(where)

    # (Not docs/api/generated/, which the site's build writes.)
    pages = [os.path.join(ROOT, "README.md"),
             *[path for folder in ("docs", "docs/guide", "docs/api") for ext in ("md", "rst")
               for path in glob.glob(os.path.join(ROOT, folder, f"*.{ext}"))]]
    for path in pages:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        add(DOTTED.findall(text), os.path.relpath(path, ROOT))
        if path.endswith(".rst"):
            add(_rst_names(text), os.path.relpath(path, ROOT))
    for path in glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True):
        for doc in _docstrings(path):
            add(DOTTED.findall(doc), os.path.relpath(path, os.path.dirname(PACKAGE)))
    for ext in ("pyx", "pxd", "pyi"):
        for path in glob.glob(os.path.join(ROOT, "zarrcore", "**", f"*.{ext}"), recursive=True):
            for doc in _compiled_docstrings(path):
                add(DOTTED.findall(doc), os.path.relpath(path, ROOT))
    return found


def resolve(name):
    """The object `name` names: a module imported, then attributes of it (the longest module
    first, as `from a.b import c` and `a.b.c` both find it)."""
    parts = name.split(".")
    failure = None
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
            for part in parts[split:]:
                found = getattr(found, part)
            return found
        except ModuleNotFoundError as error:
            if not (error.name or "").startswith("zarrcore"):
                raise  # (a module of an optional dependency: not this name's fault)
            failure = error
        except AttributeError as error:
            failure = error
    raise failure


def test_the_reader_sees_names_in_text_directives_autosummary_and_roles():
    page = (".. currentmodule:: zarrcore.nodes\n\nSee ``zarrcore.Array`` and "
            ":class:`~views.LazyArray`; via-zarrcore.zarr is a file.\n\n"
            ".. autosummary::\n   :toctree: generated\n\n   info.ArrayInfo\n\n"
            ".. autoclass:: node.BrokenNode\n\n   The class.\n")
    assert _rst_names(page) | set(DOTTED.findall(page)) == {
        "zarrcore.nodes", "zarrcore.Array", "zarrcore.nodes.views.LazyArray",
        "zarrcore.nodes.info.ArrayInfo", "zarrcore.nodes.node.BrokenNode"}


@needs_docs
def test_every_documented_name_resolves_where_the_docs_say():
    names = documented_names()
    assert {"zarrcore.nodes.info.ArrayInfo", "zarrcore.api.asynchronous.open_array",
            "zarrcore.errors.PipelineFallbackError", "zarrcore.config.set",
            "zarrcore._native.memstore.NativeMemoryMap"} <= set(names)
    assert any(path.startswith("docs/api/") for path in names["zarrcore.config.set"])
    assert "docs/architecture.md" in {p for paths in names.values() for p in paths}
    broken = {}
    with warnings.catch_warnings():
        # (A name documented at a path it moved from resolves, with a warning: not here.)
        warnings.filterwarnings("error", r".* is now .*: .* will be removed", DeprecationWarning)
        for name, where in sorted(names.items()):
            try:
                resolve(name)
            except ModuleNotFoundError as error:
                if not (error.name or "").startswith("zarrcore"):
                    continue  # (needs an optional dependency this Python has not)
                broken[name] = f"{where}: {error}"
            except (AttributeError, DeprecationWarning) as error:
                broken[name] = f"{where}: {error}"
    assert not broken, broken


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_a_moved_name_imports_from_its_old_module_with_a_warning(old, new):
    module, _, name = old.rpartition(".")
    namespace = {}
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} is now {new}")):
        exec(f"from {module} import {name} as found", namespace)
    assert namespace["found"] is resolve(new)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        assert resolve(old) is resolve(new)


def test_every_module_kept_for_moved_names_is_tested():
    from zarrcore.api import _moved

    assert set(_moved.MOVED) == {old.rpartition(".")[0] for old in MOVED}


@pytest.mark.parametrize("old, new", [("zarrcore.asynchronous", "zarrcore.api.asynchronous"),
                                      ("zarrcore.icechunk", "zarrcore.storage.icechunk")])
def test_a_module_kept_under_its_earlier_name_gives_its_names_without_a_warning(old, new):
    if new.endswith("icechunk"):
        pytest.importorskip("zarr", reason="zarrcore.storage.icechunk imports zarr-python")
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(f"import {old} as found\nfrom {old} import *", namespace)
    module = importlib.import_module(new)
    assert all(namespace[name] is getattr(module, name) for name in module.__all__)


def test_the_function_zarrcore_array_keeps_its_name_beside_the_module():
    import zarrcore.array  # noqa: F401  (the moved module: the name stays the function's)

    assert zarrcore.array is zarrcore.api.array
    with pytest.raises(ImportError, match="cannot import name 'nothing'"):
        from zarrcore.array import nothing  # noqa: F401
