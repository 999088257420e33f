"""The `cli-reference` directive: the help of the `zarrcore` command and of each of its
subcommands, as their argument parser (zarrcore/cli.py) prints it, one section each."""
import argparse
import os
from unittest import mock

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

import zarrcore.cli


class _Parsed(Exception):
    """Raised in place of parsing, carrying the parser that `main` built."""

    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def _raise_parsed(parser, *args, **kwargs):
    raise _Parsed(parser)


def command_parser():
    """The parser `zarrcore.cli.main` builds: stopped where it would parse the arguments."""
    # parse_args goes through parse_known_args: either way of parsing is caught.
    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", _raise_parsed):
        try:
            zarrcore.cli.main([])
        except _Parsed as parsed:
            return parsed.parser
    raise RuntimeError("zarrcore.cli.main parsed no arguments")


def subcommands(parser):
    """[(name, parser)] of `parser`'s subcommands, in the order they were added."""
    return [(name, sub) for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()]


class CliReference(SphinxDirective):
    def run(self):
        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width
        try:
            parser = command_parser()
            sections = [("zarrcore", parser)] + [(f"zarrcore {name}", sub)
                                                 for name, sub in subcommands(parser)]
            out = []
            for title, p in sections:
                section = nodes.section(ids=[nodes.make_id("cli " + title)])
                section += nodes.title(text=title)
                section += nodes.literal_block(text=p.format_help().rstrip())
                out.append(section)
            return out
        finally:
            if old is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = old


def setup(app):
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
