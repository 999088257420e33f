"""The API reference (docs/api/*.rst) has a page for every module a user imports by name."""
import glob
import os
import pkgutil
import re

import zarrcore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Modules whose public names are reached through `zarrcore` itself (documented on the pages
# of the functions, nodes, tools and stores) or not at all (internal). A new module is either
# listed here or given a page.
REACHED_THROUGH_ZARRCORE = {
    "api", "cli", "codecs", "engine", "indexing", "metadata", "nodes", "runtime", "storage",
    "tools",
}
# Modules whose page cannot import them where the site is built (the suite's Python 3.11, with
# zarr-python 3.1): their page names them in a `.. module::` directive and describes them.
NEEDS_A_NEWER_ZARR = {"zarr_pipeline"}


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
    assert modules - REACHED_THROUGH_ZARRCORE - documented - described == set()
    assert documented <= modules, "a page documents a module that does not exist"
