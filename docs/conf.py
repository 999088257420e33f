"""Sphinx configuration of zarrcore's documentation: the user guide (MyST Markdown, guide/),
the API reference (api/) and the development pages (`make docs`).

zarrcore is imported as installed (its compiled modules are needed): `make docs` installs it
into the virtualenv first; when building by hand, put a checkout built in place on PYTHONPATH.
"""
import ast
import copy
import importlib.machinery
import os
import sys

import zarrcore

# The local extensions: the CLI reference (_ext/cli_reference.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "zarrcore"
author = "zarrcore developers"
copyright = "zarrcore developers"
version = release = zarrcore.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "cli_reference",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# Links to headings of Markdown pages (architecture.md#a-chunk-grid) resolve and are checked.
myst_heading_anchors = 3
# Docstrings mark names and code with single backquotes.
default_role = "code"

autosummary_generate = True
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_type_aliases = {
    name: f"zarrcore.metadata.types.{name}"
    for name in ("StoreLike", "ShapeLike", "ChunksLike", "CodecLike", "CodecsLike", "Selection",
                 "NodeMetadata")
}
# Members are listed by the autosummary templates, not by numpydoc.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping = {}

html_theme = "furo"
html_title = f"zarrcore {release}"
# numpydoc checks that every parameter of the API is documented (and only real ones), and
# every return value:
# but in special methods, in the constructors of classes the API returns (not for users
# to call), and in the stores' and the compiled modules' documentation, which is not in
# numpydoc style yet.
numpydoc_validation_checks = {"PR01", "PR02", "RT01"}
numpydoc_validation_exclude = {
    r"\.__\w+__$",
    r"^zarrcore\.(Array|Group)$",
    r"^zarrcore\.(nodes\.info\.ArrayInfo|nodes\.Attributes|nodes\.BrokenNode|api\.GroupArrays)$",
    r"^zarrcore\.tools\.\w+Report$",
    r"^zarrcore\.(Store|LocalStore|MemoryStore|ZipStore|ObjectStore|FsspecStore)(\.\w+)?$",
    r"^zarrcore\.metadata\.types\.",
    r"^zarrcore\.(kernels|array_api)\.",
}


# -- signatures of the compiled modules ---------------------------------------------------------
# Compiled functions carry their parameters but no annotations: those are in the module's stub
# (zarrcore/NAME.pyi), which autodoc does not read for a module already imported.
def _stub_path(module):
    """The stub beside compiled `module`'s file, or None when `module` is not compiled."""
    path = getattr(module, "__file__", None) or ""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if path.endswith(suffix):
            return path[:-len(suffix)] + ".pyi"
    return None


def _private_aliases(statements):
    """{name: expression} of the stub's private type variables (by their bound) and aliases,
    which the reference shows expanded."""
    aliases = {}
    for node in statements:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id.startswith("_"):
            value = node.value
            if isinstance(value, ast.Call) and ast.unparse(value.func) == "TypeVar":
                value = next(k.value for k in value.keywords if k.arg == "bound")
            aliases[node.targets[0].id] = value
    return aliases


def _union(annotations, aliases):
    """The union of `annotations` (ast expressions), private aliases expanded, each member once,
    None last; None when there are none."""
    members = []

    def add(node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            add(node.left)
            add(node.right)
        elif isinstance(node, ast.Name) and node.id in aliases:
            add(aliases[node.id])
        elif ast.unparse(node) not in members:
            members.append(ast.unparse(node))

    for annotation in annotations:
        if annotation is not None:
            add(annotation)
    if not members:
        return None
    members.sort(key=lambda m: m == "None")
    return ast.parse(" | ".join(members), mode="eval").body


def _merged(overloads, aliases):
    """(arguments, return annotation) of one signature standing for the stub's `overloads` of a
    function: each parameter and the return annotated with the union of the overloads' types,
    with the first overload's defaults; `self` left out."""
    args = copy.deepcopy(overloads[0].args)
    if args.args and args.args[0].arg == "self":
        args.args.pop(0)
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        arg.annotation = _union([a.annotation for o in overloads
                                 for a in o.args.posonlyargs + o.args.args + o.args.kwonlyargs
                                 if a.arg == arg.arg], aliases)
    returns = _union([o.returns for o in overloads], aliases)
    return f"({ast.unparse(args)})", ast.unparse(returns) if returns is not None else ""


def _stub_signatures(path):
    """{qualified name: (arguments, return annotation)} of the functions and methods (not
    properties) the stub at `path` declares."""
    with open(path, encoding="utf-8") as f:
        statements = ast.parse(f.read()).body
    aliases = _private_aliases(statements)
    functions = {}
    for node in statements:
        scopes = [("", node)] if not isinstance(node, ast.ClassDef) else \
            [(node.name + ".", child) for child in node.body]
        for prefix, child in scopes:
            if isinstance(child, ast.FunctionDef) and not any(
                    ast.unparse(d) == "property" for d in child.decorator_list):
                functions.setdefault(prefix + child.name, []).append(child)
    return {name: _merged(overloads, aliases) for name, overloads in functions.items()}


_STUBS = {}


def _signature_from_stub(app, what, name, obj, options, signature, return_annotation):
    """The signature of a compiled function or method as its module's stub declares it."""
    path = _stub_path(sys.modules.get(getattr(obj, "__module__", None) or ""))
    if path is None or what not in ("function", "method"):
        return None
    if path not in _STUBS:
        _STUBS[path] = _stub_signatures(path)
    return _STUBS[path].get(obj.__qualname__)


def setup(app):
    app.connect("autodoc-process-signature", _signature_from_stub)
