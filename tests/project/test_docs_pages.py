"""The API reference (docs/api/*.rst) has a page for every module a user imports by name; the
README lists every page of the user guide."""
import glob
import importlib
import os
import pkgutil
import re

import zarrcore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Modules whose public names are reached through `zarrcore` itself (documented on the pages
# of the functions, nodes, tools and stores) or not at all (internal). A new module is either
# listed here or given a page.
REACHED_THROUGH_ZARRCORE = {
    "api", "cli", "codecs", "engine", "metadata", "nodes", "runtime", "storage", "tools",
}
# Modules whose page cannot import them where the site is built (the suite's Python 3.11, with
# zarr-python 3.1): their page names them in a `.. module::` directive and describes them.
NEEDS_A_NEWER_ZARR = {"zarr_pipeline"}
# Modules kept only where names were documented before they moved (zarrcore/api/_moved.py): their
# names warn and have pages where they are now (tests/project/test_doc_paths.py).
MOVED = {"array", "array_chunks", "views", "indexing", "_types"}


def test_every_public_module_has_a_page():
    modules = {m.name for m in pkgutil.iter_modules(zarrcore.__path__)
               if not m.name.startswith("_")}
    pages = ""
    for path in glob.glob(os.path.join(ROOT, "docs", "api", "*.rst")):
        with open(path, encoding="utf-8") as f:
            pages += f.read()
    documented = set(re.findall(r"^\.\. automodule:: zarrcore\.(\w+)$", pages, re.M))
    described = set(re.findall(r"^\.\. module:: zarrcore\.(\w+)$", pages, re.M))
    assert described == NEEDS_A_NEWER_ZARR
    assert modules - REACHED_THROUGH_ZARRCORE - MOVED - documented - described == set()
    assert documented <= modules, "a page documents a module that does not exist"
    for name in MOVED:
        module = importlib.import_module(f"zarrcore.{name}")
        assert module.__getattr__.__module__ == "zarrcore.api._moved", name


def test_the_readme_lists_every_guide_page():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        listed = set(re.findall(r"\(docs/guide/([\w-]+)\.md\)", f.read()))
    pages = {os.path.basename(path)[:-3]
             for path in glob.glob(os.path.join(ROOT, "docs", "guide", "*.md"))}
    assert pages - {"index"} - listed == set()
