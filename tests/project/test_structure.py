"""The project's structure: csrc/ files call each other without cycles, the status codes and
the dimension limit are defined once; Python modules import only from their layer and those
below, without cycles; the engine asks codecs and stores what they do rather than switching
on their classes, and nested parallel work is a flag of the runtime."""
import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import threading
from collections import defaultdict
from functools import cache

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")

needs_csrc = pytest.mark.skipif(not os.path.isdir(CSRC), reason="needs the source tree's csrc/")

# A definition starts a line (with its return type), as every csrc file lays them out; its
# body follows its parameters.
DEFINITION = re.compile(r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?(\w+)\(([^;{]*?)\)\s*\n?\{",
                        re.MULTILINE)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
NOT_CALLS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}
# Files for one platform only: their calls go to the others of that platform or to neither.
PLATFORMS = ("zc_os_posix_", "zc_os_win_")


def _source(path):
    """The file's text without comments, string and character literals."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"'(?:\\.|[^'\\\n])+'", "' '", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def _functions(text):
    """(name, is_static, body) of each function defined in `text`."""
    found = []
    for m in DEFINITION.finditer(text):
        if m.group(1) in NOT_CALLS:
            continue
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        head = text[m.start():m.start(1)]
        found.append((m.group(1), "static" in head.split(), text[m.end():i]))
    return found


def _platform(name):
    return next((p for p in PLATFORMS if name.startswith(p)), None)


def _csrc_files(suffixes):
    """{file name: path} of the files of csrc/ (in its folders) ending in `suffixes`."""
    return {name: os.path.join(folder, name) for folder, _, names in os.walk(CSRC)
            for name in names if name.endswith(suffixes)}


def csrc_call_graph():
    """{file: {files whose functions its functions call}} over csrc/'s C files."""
    paths = _csrc_files(".c")
    files = sorted(paths)
    defined = defaultdict(set)  # external function name -> files defining it
    local, calls = {}, {}
    for name in files:
        functions = _functions(_source(paths[name]))
        local[name] = {f for f, _, _ in functions}
        calls[name] = {c for _, _, body in functions for c in CALL.findall(body)} - NOT_CALLS
        for f, static, _ in functions:
            if not static:
                defined[f].add(name)
    graph = {}
    for name in files:
        platform = _platform(name)  # (a file's own names are in local[name])
        targets = set()
        for c in calls[name] - local[name]:
            targets |= {t for t in defined.get(c, ())
                        if platform is None or _platform(t) in (None, platform)}
        graph[name] = targets
    return graph


def find_cycle(graph):
    """A list of nodes (files, modules) whose edges lead around in a circle, or None."""
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@needs_csrc
def test_the_call_graph_reader_sees_calls_between_files():
    graph = csrc_call_graph()
    assert {"zc_os_path.c", "zc_os_posix_file.c", "zc_os_win_file.c"} <= graph["zc_fs.c"]
    assert "zc_crc32c.c" in graph["zc_chain.c"]
    # Platform files reach only their own platform's.
    assert not any(_platform(t) == "zc_os_win_" for t in graph["zc_os_posix_file.c"])


@needs_csrc
def test_no_call_cycle_between_csrc_files():
    cycle = find_cycle(csrc_call_graph())
    assert cycle is None, " -> ".join(cycle)


def _defines(pattern):
    """(file, line) of each `#define` of a name matching `pattern` in csrc/ and zarrcore/."""
    hits = []
    for folder in (CSRC, os.path.join(ROOT, "zarrcore")):
        paths = {name: os.path.join(top, name) for top, _, names in os.walk(folder)
                 for name in names}
        for name in sorted(paths):
            if name.endswith((".c", ".h")):
                for line in _source(paths[name]).splitlines():
                    if re.match(r"\s*#\s*define\s+" + pattern + r"\b", line):
                        hits.append((name, line.strip()))
    return hits


@needs_csrc
def test_status_codes_are_defined_only_in_zc_status_h():
    hits = _defines(r"ZC_(?:OK|ERR_\w+)")
    assert hits and {f for f, _ in hits} == {"zc_status.h"}, hits


@needs_csrc
def test_the_dimension_limit_is_defined_once():
    # C: one number. The public header keeps its own name for it, checked equal at build.
    limits = _defines(r"ZC_\w*MAX_NDIM")
    assert [f for f, _ in limits] == ["zc_status.h", "array_api.h"], limits
    with open(os.path.join(CSRC, "jobs", "zc_array.h"), encoding="utf-8") as f:
        assert "#if ZC_ARRAY_MAX_NDIM != ZC_MAX_NDIM" in f.read()
    # Cython takes it from _native/status.pxd (no arrays sized by a literal), Python from it.
    for name in _cython_files():
        assert "[32]" not in _text(name), name
    assert not re.search(r"\b32\b", _text("runtime/config.py"))
    from zarrcore._native import status as _status
    from zarrcore.runtime.config import DIMENSIONS_CEILING, LIMITS

    assert DIMENSIONS_CEILING == LIMITS["max_dimensions"][1] == _status.MAX_NDIM == 32


def _cython_files():
    """The Cython files of the package, by their paths below zarrcore/."""
    package = os.path.join(ROOT, "zarrcore")
    return sorted(os.path.relpath(os.path.join(folder, n), package)
                  for folder, _, names in os.walk(package) for n in names
                  if n.endswith((".pyx", ".pxd")))


def _text(name):
    with open(os.path.join(ROOT, "zarrcore", name), encoding="utf-8") as f:
        return f.read()


@needs_csrc
def test_cython_modules_share_one_status_mapping_and_one_buffer_helper():
    declaring = [n for n in _cython_files() if 'extern from "zc_status.h"' in _text(n)]
    assert declaring == ["_native/status.pxd"]
    for name in _cython_files():
        if name not in ("_native/status.pyx", "_native/buffers.pxd"):
            text = _text(name)
            assert "def status_error" not in text, name
            assert "PyObject_GetBuffer(obj" not in text, name


# -- the floors ----------------------------------------------------------------------------------
# What a build leaves beside the sources (in-place extensions, Cython's C): not the layout.
BUILT = (".so", ".pyd", ".c", ".html")


def _entries(folder):
    return sorted(n for n in os.listdir(folder) if n != "__pycache__" and not n.endswith(BUILT))


def test_the_package_top_level_shows_the_floors():
    """`ls zarrcore`: the folders of the floors, the face's modules and the public compiled
    modules (for `cimport`), at most 25 entries; every private binding is in `_native/`."""
    entries = _entries(PACKAGE)
    assert len(entries) <= 25, entries
    assert not [n for n in entries if n.endswith((".pyx", ".pxd", ".pyi"))
                and not n.startswith(("kernels.", "array_api."))]


@needs_csrc
def test_csrc_is_grouped_by_concern():
    assert _entries(CSRC) == ["cache", "codecs", "files", "jobs", "memory", "os", "zc_status.h"]


# -- the Python package's layers -----------------------------------------------------------------

PACKAGE = os.path.join(ROOT, "zarrcore")
# Each module's layer, by its longest matching name prefix; a module imports only modules of
# its own layer or lower ones (README: API/tools/CLI -> arrays/groups -> pipeline ->
# codecs/storage/metadata -> runtime/errors -> Cython -> csrc).
LAYERS = {
    "zarrcore": 5, "zarrcore.api": 5, "zarrcore.tools": 5, "zarrcore.xarray": 5,
    "zarrcore.dask": 5, "zarrcore.ray": 5, "zarrcore.cli": 5, "zarrcore.zarr_pipeline": 5,
    "zarrcore.nodes": 4,
    "zarrcore.engine": 3,
    "zarrcore.codecs": 2, "zarrcore.storage": 2, "zarrcore.metadata": 2,
    "zarrcore.runtime": 1, "zarrcore.errors": 1,
    "zarrcore._native": 0,
}
CYTHON_LAYER = 0


@cache
def _python_modules():
    """{dotted name: file} of the package's Python modules."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


@cache
def _read(path):
    """(text, parsed tree) of the module at `path`, read once: the tests only walk the trees."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text, ast.parse(text)


def _tree(path):
    return _read(path)[1]


def _is_module(dotted, modules):
    return dotted in modules or os.path.exists(os.path.join(ROOT, *dotted.split(".")) + ".pyx")


def _imported(module, node, is_package, modules):
    """The package's modules that the import statement `node` in `module` imports."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.split(".")[0] == "zarrcore"}
    if node.level:
        base = module.split(".")[:len(module.split(".")) + is_package - node.level]
        source = ".".join(base + ([node.module] if node.module else []))
    elif (node.module or "").split(".")[0] == "zarrcore":
        source = node.module
    else:
        return set()
    return {f"{source}.{a.name}" if _is_module(f"{source}.{a.name}", modules) else source
            for a in node.names}


def _type_checking_only(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@cache
def python_imports(typing=False):
    """({module: modules it imports}, [(module, line) of imports inside functions], lines)
    over the package; imports only for type checkers count with `typing`. Made once: callers
    only read it."""
    modules = _python_modules()
    graph, local, lines = {}, [], 0
    for module, path in modules.items():
        text, tree = _read(path)
        lines += text.count("\n")
        graph[module] = set()

        def walk(node, in_function):
            for child in ast.iter_child_nodes(node):
                if _type_checking_only(child) and not typing:
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    found = _imported(module, child, path.endswith("__init__.py"), modules)
                    graph[module] |= found - {module}
                    if found and in_function:
                        local.append((module, child.lineno))
                walk(child, in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        walk(tree, False)
    return graph, local, lines


def layer(module):
    if module not in _python_modules():
        return CYTHON_LAYER
    names = [n for n in LAYERS if module == n or module.startswith(n + ".")]
    assert names, f"{module} has no layer in LAYERS"
    return LAYERS[max(names, key=len)]


def test_the_import_reader_sees_relative_package_and_local_imports():
    graph, local, _ = python_imports()
    assert "zarrcore._native.memory" in graph["zarrcore.nodes.array"]  # from .. import _memory
    assert "zarrcore.codecs.chain" in graph["zarrcore.engine"]  # from .codecs.chain import
    assert "zarrcore.dask" in graph["zarrcore.xarray.writer"]  # inside a function
    assert any(module == "zarrcore.xarray.writer" for module, _ in local)
    assert "zarrcore.metadata.types" not in graph["zarrcore.nodes.node"]  # (only for type checkers)
    assert "zarrcore.metadata.types" in python_imports(typing=True)[0]["zarrcore.nodes.node"]
    assert "zarrcore.nodes.node" in graph["zarrcore.nodes"]  # from .node import


def test_no_module_imports_a_higher_layer():
    graph, _, _ = python_imports()
    upward = sorted((m, t) for m, targets in graph.items() for t in targets
                    if layer(t) > layer(m))
    assert not upward


def test_no_import_cycle_between_python_modules():
    graph, _, _ = python_imports()
    assert find_cycle(graph) is None, find_cycle(graph)


def test_no_import_cycle_between_python_modules_counting_type_checkers():
    """Imports only for type checkers tie modules too, inside a layer's package as well (the
    codec chain knows no codec of its own: the sharding codec, which holds chains, finds its
    chain's with `partial_codec`). A module may name the classes of the package it is in for
    them: the engine's route modules name ChunkEngine."""
    graph, _, _ = python_imports(typing=True)
    assert "zarrcore.codecs.chain" in graph["zarrcore.codecs.sharding"]
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in graph.items()}
    assert find_cycle(graph) is None, find_cycle(graph)


def test_the_cycle_finder_sees_a_cycle_of_imports_for_type_checkers_in_a_package():
    graph, _, _ = python_imports(typing=True)
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in graph.items()}
    graph["zarrcore.codecs.chain"].add("zarrcore.codecs.sharding")  # (as a typing import did)
    assert set(find_cycle(graph)) == {"zarrcore.codecs.chain", "zarrcore.codecs.sharding"}


# The objects built on an Array (and a Group): they import array.py, which imports none of
# them, and give Array its attributes for them (Array's "faces").
NODE_FACES = ("views", "async_nodes", "info", "streaming", "array_dask")


def test_the_faces_of_nodes_import_array_and_not_the_reverse():
    graph, _, _ = python_imports(typing=True)
    faces = {f"zarrcore.nodes.{name}" for name in NODE_FACES}
    assert all("zarrcore.nodes.array" in graph[face] for face in faces)
    assert not graph["zarrcore.nodes.array"] & faces
    assert "zarrcore.nodes.async_nodes" not in graph["zarrcore.nodes.group"]
    # (and no module below the faces imports one)
    below = {"zarrcore.nodes.array", "zarrcore.nodes.group", "zarrcore.nodes.node",
             "zarrcore.nodes.creation", "zarrcore.nodes.array_specs"}
    assert not any(graph[module] & faces for module in below)


def test_no_module_imports_the_package_it_is_in():
    """A layer package's __init__ re-exports its modules; a module importing it would import
    its siblings through it, and in a cycle. (The face reads zarrcore.__version__.)"""
    graph, _, _ = python_imports()
    found = sorted((m, t) for m, targets in graph.items() for t in targets
                   if m.startswith(t + ".") and t != "zarrcore")
    assert not found


def test_no_module_imports_a_private_name_of_another():
    """What a module shares with others has a public name: no `from .x import _name` within
    the package (private modules themselves, as `from .. import _memory`, are imported)."""
    modules = _python_modules()
    found = []
    for module, path in modules.items():
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            sources = _imported(module, node, path.endswith("__init__.py"), modules)
            found += [(module, node.lineno, a.name) for a in node.names
                      if sources and a.name.startswith("_") and not a.name.startswith("__")
                      and not any(s.endswith("." + a.name) for s in sources)]
    assert not found


def test_engine_runners_read_no_private_name_of_the_engine():
    """The route modules take the engine as their first argument and read only its public
    names (ChunkEngine documents them)."""
    for name in ("planning", "directory", "fetched", "shard_ranges", "partial_writes",
                 "chunk_access"):
        with open(os.path.join(PACKAGE, "engine", name + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        private = [(name, n.lineno, n.attr) for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and n.attr.startswith("_")
                   and not n.attr.startswith("__") and ast.unparse(n.value).endswith("engine")]
        assert not private


# -- sizes ------------------------------------------------------------------------------------
MOST_MODULE_LINES = 1_000
# (The engine's constructor takes the array's layout, ArrayLayout, its settings,
# EngineSettings, its codec chain, the routes open to it, OpenRoutes, and where its stored
# objects lie, ObjectPlaces, each one object: ChunkEngine.from_layout makes them.)
MOST_FUNCTION_LINES, MOST_PARAMETERS = 60, 8


def _functions_of(tree, prefix):
    """(dotted name, lines, parameters) of each function and method defined in `tree`
    (nested ones too), named below `prefix`."""
    found = []

    def walk(node, name):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = child.args
                parameters = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                              + (a.vararg is not None) + (a.kwarg is not None))
                found.append((f"{name}.{child.name}", child.end_lineno - child.lineno + 1,
                              parameters))
                walk(child, f"{name}.{child.name}")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{name}.{child.name}")
            else:
                walk(child, name)

    walk(tree, prefix)
    return found


def test_no_module_is_over_a_thousand_lines():
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith((".py", ".pyx", ".pxd", ".pyi")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().count("\n")
                if lines > MOST_MODULE_LINES:
                    found.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), lines))
    assert not found, found


def test_the_function_reader_sees_methods_and_nested_functions():
    tree = ast.parse("class A:\n    def f(self, a, *b, c, **d):\n        def g():\n"
                     "            pass\n")
    assert _functions_of(tree, "m") == [("m.A.f", 3, 5), ("m.A.f.g", 2, 0)]


def test_no_engine_function_is_over_sixty_lines_or_eight_parameters():
    found = []
    for module, path in _python_modules().items():
        if module == "zarrcore.engine" or module.startswith("zarrcore.engine."):
            found += [(name, lines, parameters)
                      for name, lines, parameters in _functions_of(_tree(path), module)
                      if lines > MOST_FUNCTION_LINES or parameters > MOST_PARAMETERS]
    assert not found, found


def test_few_imports_inside_functions():
    """An import inside a function hides a dependency: one per 1,000 lines at most (those of
    optional packages, outside zarrcore, do not count)."""
    _, local, lines = python_imports()
    assert lines > 10_000  # (the reader sees the package)
    assert len(local) <= lines / 1000, sorted(local)


# -- asking, not switching ------------------------------------------------------------------


def _subclasses(cls):
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _class_names(base, package, allowed):
    """Names of the classes of `package` (zarrcore.codecs, zarrcore.storage) deriving from
    `base`, but for `allowed` (the interfaces: asking "is it one at all" is no switch)."""
    return {c.__name__ for c in _subclasses(base) | {base}
            if c.__module__.startswith(package) and c.__name__ not in allowed}


def _codec_classes():
    import zarrcore.codecs  # noqa: F401  (registers every codec module)
    from zarrcore.codecs import base
    from zarrcore.codecs.numcodecs_v3 import NumcodecsBytesCodec  # noqa: F401

    kinds = {"Codec", "ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec"}
    return _class_names(base.Codec, "zarrcore.codecs", kinds)


def _store_classes():
    import zarrcore.storage  # noqa: F401
    from zarrcore.storage.base import Store

    return _class_names(Store, "zarrcore.storage", {"Store"}) | {"Store"}


def _names(node):
    """The class names an isinstance/compare operand mentions (`A`, `mod.A`, tuples)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr} | _names(node.value)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*map(_names, node.elts)) if node.elts else set()
    return set()


def _is_call(node, *names):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in names)


def _storeish(node):
    """Does `node` name a store (`store`, `self._store`, `chunks.store`...)?"""
    name = node.id if isinstance(node, ast.Name) else (
        node.attr if isinstance(node, ast.Attribute) else "")
    return name.lstrip("_").endswith("store")


def switches(tree, classes, kind_of_store=False):
    """(line, code) of each place in `tree` that switches on one of `classes`: isinstance or
    issubclass with one, `type(x) is/in/== ...` mentioning one; for stores also `type(store)`
    (but for its __name__), getattr/hasattr on a store and a store's private attributes."""
    found = []
    named_types = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "__name__"
                and _is_call(node.value, "type")):
            named_types.add(id(node.value))
    for node in ast.walk(tree):
        hit = False
        if _is_call(node, "isinstance", "issubclass") and len(node.args) == 2:
            hit = bool(_names(node.args[1]) & classes)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            hit = (any(_is_call(n, "type") for s in sides for n in ast.walk(s))
                   and bool(set().union(*map(_names, sides)) & classes))
        elif kind_of_store and _is_call(node, "type") and id(node) not in named_types:
            hit = any(_storeish(a) for a in node.args)
        elif kind_of_store and _is_call(node, "getattr", "hasattr") and node.args:
            hit = _storeish(node.args[0])
        elif (kind_of_store and isinstance(node, ast.Attribute) and node.attr.startswith("_")
              and not node.attr.startswith("__")):
            hit = _storeish(node.value) and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        if hit:
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def _modules(outside):
    """(path, tree) of each Python module of the package outside the folder `outside`."""
    for folder, _, files in os.walk(PACKAGE):
        if os.path.relpath(folder, PACKAGE).split(os.sep)[0] == outside:
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, ROOT), _tree(path)


def _cython_sources():
    for name in _cython_files():
        yield name, _text(name)


def test_the_switch_finder_sees_switches():
    code = ("isinstance(c, ZstdCodec)\nif type(c) in (GzipCodec, zc.ZlibCodec): pass\n"
            "isinstance(s, (Group, LocalStore))\ntype(store).reader is Store.reader\n"
            "getattr(store, 'native_memory')\nself._store._path\n"
            "isinstance(c, ArrayBytesCodec)\ntype(self._store).__name__\nself._path\n")
    tree = ast.parse(code)
    assert [line for line, _ in switches(tree, {"ZstdCodec", "GzipCodec", "ZlibCodec"})] == [1, 2]
    stores = switches(tree, {"LocalStore", "Store"}, kind_of_store=True)
    assert [line for line, _ in stores] == [3, 4, 4, 5, 6], stores


def test_no_module_outside_the_codecs_switches_on_codec_classes():
    classes = _codec_classes()
    assert {"ZstdCodec", "BytesCodec", "ShardingCodec", "Crc32cCodec"} <= classes
    found = [(path, *hit) for path, tree in _modules("codecs") for hit in switches(tree, classes)]
    names = "|".join(sorted(classes))
    pattern = re.compile(rf"(?:isinstance|issubclass)\([^)]*\b(?:{names})\b"
                         rf"|type\([^)]*\)\s*(?:is|in|==)[^\n]*\b(?:{names})\b")
    found += [(name, m.group()) for name, text in _cython_sources() for m in pattern.finditer(text)]
    assert not found, found


def test_no_module_outside_the_storage_switches_on_stores_or_reads_their_insides():
    classes = _store_classes()
    assert {"LocalStore", "MemoryStore", "ObjectStore", "Store"} <= classes
    # (isinstance(x, Store), "is it a store at all", is no switch on the kind of store.)
    found = [(path, *hit) for path, tree in _modules("storage")
             for hit in switches(tree, classes - {"Store"}, kind_of_store=True)]
    store = r"\b_?\w*store\b"
    pattern = re.compile(rf"isinstance\([^)]*\b(?:{'|'.join(sorted(classes - {'Store'}))})\b"
                         rf"|type\({store}\)|[gs]etattr\({store}|hasattr\({store}|{store}\._[a-z]")
    found += [(name, m.group()) for name, text in _cython_sources() for m in pattern.finditer(text)]
    assert not found, found


# -- nested parallel work ---------------------------------------------------------------------
def test_pool_threads_are_inside_parallel_work_and_thread_names_mean_nothing():
    from zarrcore.runtime.config import config
    from zarrcore.runtime.pool import in_parallel_work

    assert not in_parallel_work()
    assert config.executor().submit(in_parallel_work).result() is True
    seen = []
    thread = threading.Thread(target=lambda: seen.append(in_parallel_work()), name="zarrcore-x")
    thread.start()
    thread.join()
    assert seen == [False]


# -- optional dependencies ------------------------------------------------------------------------
def test_importing_zarrcore_imports_no_optional_library():
    """zarr-python, xarray and dask are imported by the modules that need them (the codec
    pipeline, the xarray backend), never by `import zarrcore`."""
    code = ("import sys, zarrcore, zarrcore.api; "
            "print(sorted(m for m in ('zarr', 'xarray', 'dask') if m in sys.modules))")
    # (The zarrcore this suite tests: installed, or the checkout's on the caller's PYTHONPATH.)
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert found.stdout.strip() == "[]", found.stdout


def test_importing_zarrcore_imports_no_event_loop():
    """asyncio (with ssl, 30-40 ms of a process's start: a spawned loader worker's too) is
    imported where an event loop is made or runs, never by `import zarrcore`; secrets (6-11
    ms) not at all. (What numpy imports itself is not zarrcore's: numpy < 2's `random`
    imports secrets.)"""
    code = ("import sys, numpy; before = set(sys.modules); import zarrcore, zarrcore.api; "
            "print(sorted(m for m in ('asyncio', 'ssl', 'secrets') "
            "if m in sys.modules and m not in before))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert found.stdout.strip() == "[]", found.stdout


def test_zarr_python_loads_the_pipeline_entry_point_at_any_version():
    """zarr-python loads every registered `zarr.codec_pipeline` entry point whenever it looks
    for its pipeline, so the pipeline's module imports under any zarr-python 3 (3.1 on Python
    3.11 included), and only a pipeline that cannot run there refuses to be made."""
    zarr = pytest.importorskip("zarr", reason="the entry point's loader is zarr-python")
    from zarr.registry import Registry

    entry = importlib.metadata.EntryPoint(
        name="zarrcore", value="zarrcore.zarr_pipeline:ZarrcorePipeline",
        group="zarr.codec_pipeline")
    registry = Registry()
    registry.lazy_load_list.append(entry)
    registry.lazy_load()  # as zarr.registry.get_pipeline_class does
    assert "zarrcore.zarr_pipeline.ZarrcorePipeline" in registry
    zarr.create_array({}, shape=(4,), dtype="i4")  # zarr-python itself keeps working
