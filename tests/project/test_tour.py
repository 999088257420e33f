"""The tour of the code (docs/architecture.md, "A tour") stays short and true: its first 80
lines name at most 40 distinct identifiers (code in backticks, paths), every path it names is
a folder or file of the package or of csrc/, every code name is defined there, and it names
the floors as they are laid out now."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")
TOUR_LINES, MOST_IDENTIFIERS = 80, 40

needs_docs = pytest.mark.skipif(not os.path.isfile(ARCHITECTURE),
                                reason="needs the source tree's docs/")

# A path outside backticks: with a slash, or a file of the code by its extension.
BARE_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/[\w./-]*|\w+\.(?:py|pyx|pxd|pyi|c|h))\b/?")
# A name of code: identifiers joined by dots (not an expression such as `a[sel]`).
CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def tour():
    """The tour's lines: its section, up to the next one, at most TOUR_LINES of them."""
    with open(ARCHITECTURE, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index("## A tour")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    return lines[start:end][:TOUR_LINES]


def identifiers(lines):
    """The distinct identifiers `lines` name: each code span, and each path outside them
    (not a link's target)."""
    text = re.sub(r"\]\([^)]*\)", "]", "\n".join(lines))
    spans = set(re.findall(r"`([^`\n]+)`", text))
    return spans | set(BARE_PATH.findall(re.sub(r"`[^`\n]+`", " ", text)))


def _sources():
    """{path: text} of the package's Python and Cython sources."""
    found = {}
    for folder, _, names in os.walk(os.path.join(ROOT, "zarrcore")):
        for name in names:
            if name.endswith((".py", ".pyx", ".pxd")):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    found[os.path.join(folder, name)] = f.read()
    return found


def _defines(text, name):
    return re.search(rf"^\s*(?:(?:async |cp)?def|(?:cdef )?class) {name}\b|^\s*{name}\s*[:=]",
                     text, re.MULTILINE) is not None


def is_defined(name, sources):
    """Is `name` (`Class`, `Class.member`, `module`) a module of the package, or defined in
    one (its last part where its first is)?"""
    first, *rest = name.split(".")
    if any(os.path.splitext(os.path.basename(p))[0] == first for p in sources):
        return True
    return any(_defines(text, first) and (not rest or _defines(text, rest[-1]))
               for text in sources.values())


def exists(path):
    """Is `path` a folder or file of the package, or csrc/ or one of its?"""
    path = path.rstrip("/")
    return any(os.path.exists(os.path.join(ROOT, top, path)) for top in ("zarrcore", "csrc", ""))


def test_the_counter_sees_code_spans_and_bare_paths_once():
    lines = ["`a/` and `b.c` then csrc/cache/x.c, `a/` and zarrcore's x.py",
             "see [the guide](guide/page.md) and `a[sel]`"]
    assert identifiers(lines) == {"a/", "b.c", "csrc/cache/x.c", "x.py", "a[sel]"}


@needs_docs
def test_the_tour_names_at_most_forty_identifiers():
    found = identifiers(tour())
    assert len(found) <= MOST_IDENTIFIERS, (len(found), sorted(found))


@needs_docs
def test_every_identifier_of_the_tour_exists():
    sources = _sources()
    wrong = []
    for name in sorted(identifiers(tour())):
        if "/" in name or name.endswith((".py", ".pyx", ".c", ".h")):
            if not exists(name):
                wrong.append(name)
        elif CODE_NAME.fullmatch(name) and not is_defined(name, sources):
            wrong.append(name)
    assert not wrong


@needs_docs
def test_the_tour_names_the_floors_as_laid_out():
    found = identifiers(tour())
    concerns = {f"{n}/" for n in os.listdir(os.path.join(ROOT, "csrc"))
                if os.path.isdir(os.path.join(ROOT, "csrc", n))}
    assert concerns <= found
    assert {"_native/", "csrc/", "runtime/", "engine/", "nodes/", "engine/routes.py"} <= found
