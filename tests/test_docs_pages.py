"""The API reference (docs/api/*.rst) has a page for every module a user imports by name."""
import glob
import os
import pkgutil
import re

import zarrcore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Modules whose public names are reached through `zarrcore` itself (documented on the pages
# of the functions, nodes, tools and stores) or not at all (internal). A new module is either
# listed here or given a page.
REACHED_THROUGH_ZARRCORE = {
    "api", "array", "cli", "codecs", "concurrency", "consolidated", "creation", "engine",
    "group", "indexing", "metadata", "nodes", "storage", "streaming", "tools",
}


def test_every_public_module_has_a_page():
    modules = {m.name for m in pkgutil.iter_modules(zarrcore.__path__)
               if not m.name.startswith("_")}
    pages = ""
    for path in glob.glob(os.path.join(ROOT, "docs", "api", "*.rst")):
        with open(path, encoding="utf-8") as f:
            pages += f.read()
    documented = set(re.findall(r"^\.\. automodule:: zarrcore\.(\w+)$", pages, re.M))
    assert modules - REACHED_THROUGH_ZARRCORE - documented == set()
    assert documented <= modules, "a page documents a module that does not exist"
