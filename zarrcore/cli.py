"""Command line: `zarrcore info|tree|verify|demo PATH`, `zarrcore convert|copy|verify SRC DST`,
`zarrcore --version`. Ctrl-C stops convert and copy cleanly: `--resume` goes on. A PATH
may lead into a zip: `data.zip/group/array`."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import __version__
from .api import open as open_node
from .api import open_group
from .errors import ZarrcoreError
from .nodes import BrokenNode
from .nodes.array import Array
from .nodes.group import Group
from .tools.convert import ConvertReport, convert
from .tools.copy import CopyReport, copy
from .tools.verify import VerifyReport, compare, verify

__all__ = [
    "cmd_convert",
    "cmd_copy",
    "cmd_demo",
    "cmd_info",
    "cmd_tree",
    "cmd_verify",
    "demo_data",
    "main",
]


def _is_url(text: str) -> bool:
    return "://" in text or "::" in text


def _locate(text: str) -> tuple[str, str]:
    """(store, path in it) of a command-line PATH: a local path that leads into a zip file
    (`out.zip/vol`) is the zip and the node's path in it; anything else is a store itself."""
    if _is_url(text):
        return text, ""
    parts = text.replace(os.sep, "/").split("/")
    for i, part in enumerate(parts[:-1]):
        head = "/".join(parts[: i + 1])
        if part.lower().endswith(".zip") and not os.path.isdir(head):
            return head, "/".join(p for p in parts[i + 1 :] if p)
    return text, ""


def _open(path: str, storage_options: dict[str, Any] | None = None) -> Array | Group:
    store, inner = _locate(path)
    return open_node(store, mode="r", path=inner, storage_options=storage_options)


def _storage_options(args: argparse.Namespace, side: str | None = None) -> dict[str, Any] | None:
    """The JSON object of --storage-options, or for `side` ("src", "dst") of
    --src-/--dst-storage-options, else of --storage-options when that side is a URL or
    neither is."""
    text = getattr(args, f"{side}_storage_options", None) if side else None
    if not text and (
        side is None or _is_url(getattr(args, side)) or not (_is_url(args.src) or _is_url(args.dst))
    ):
        text = args.storage_options
    if not text:
        return None
    try:
        options = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--storage-options is not JSON: {e}") from None
    if not isinstance(options, dict):
        raise ValueError("--storage-options must be a JSON object")
    return options


def cmd_info(args: argparse.Namespace) -> None:
    node = _open(args.path, _storage_options(args))
    if isinstance(node, Array):
        info = node.info_complete()
        print(json.dumps(info.to_dict(), indent=2) if args.json else info)
    elif args.json:
        print(
            json.dumps(
                {
                    "name": node.name,
                    "type": "Group",
                    "zarr_format": node.zarr_format,
                    "members": len(node),
                    "attributes": dict(node.attrs),
                },
                indent=2,
            )
        )
    else:
        print(node.info)


def _tree_json(node: Array | Group | BrokenNode) -> dict[str, Any]:
    if isinstance(node, BrokenNode):
        return {"name": node.basename, "type": "unreadable", "error": str(node.error)}
    if isinstance(node, Array):
        return {
            "name": node.basename,
            "type": "array",
            "shape": list(node.shape),
            "dtype": str(node.dtype),
        }
    members = sorted(node.members(), key=lambda m: m[0])
    return {"name": node.basename, "type": "group", "members": [_tree_json(m) for _, m in members]}


def cmd_tree(args: argparse.Namespace) -> None:
    node = _open(args.path, _storage_options(args))
    if args.json:
        print(json.dumps(_tree_json(node), indent=2))
    elif isinstance(node, Array):
        print(f"{node.name} {node.shape} {node.dtype}")
    else:
        print(node.tree())


def demo_data(shape: tuple[int, int, int]) -> npt.NDArray[np.float32]:
    """A smooth field with noise: compresses, and any misplaced chunk shows."""
    z, y, x = np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij")
    rng = np.random.default_rng(42)
    return (
        15
        + 10 * np.sin(x / 17) * np.cos(y / 23)
        - z / 10
        + rng.normal(0, 0.1, shape).astype(np.float32)
    ).astype(np.float32)


def cmd_demo(args: argparse.Namespace) -> None:
    root = open_group(
        args.path,
        mode="w",
        attributes={"title": "zarrcore demo"},
        storage_options=_storage_options(args),
    )
    climate = root.create_group("climate", attributes={"source": "synthetic"})
    temperature = demo_data((48, 256, 256))
    arr = root.create_array(
        "temperature",
        shape=temperature.shape,
        dtype="float32",
        chunks=(16, 64, 64),
        dimension_names=("time", "lat", "lon"),
        attributes={"units": "degC"},
    )
    arr[...] = temperature
    counts = climate.create_array(
        "station_counts",
        shape=(1000,),
        dtype="uint16",
        chunks=(128,),
        compressors=[
            {
                "name": "blosc",
                "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"},
            }
        ],
    )
    counts[:] = np.arange(1000, dtype=np.uint16) % 97
    # Sharded: 64 inner chunks per shard object, index checksummed at its end.
    pressure = climate.create_array(
        "pressure",
        shape=temperature.shape,
        dtype="float32",
        chunks=(8, 32, 32),
        shards=(16, 128, 128),
    )
    pressure[...] = 1000 + temperature
    check = _open(args.path, _storage_options(args))
    ok = (
        np.array_equal(_reread(check, "temperature"), temperature)
        and np.array_equal(_reread(check, "climate/station_counts"), np.arange(1000) % 97)
        and np.array_equal(_reread(check, "climate/pressure"), 1000 + temperature)
    )
    print(f"wrote and re-read {args.path}: {'verified' if ok else 'MISMATCH'}")
    if not ok:
        sys.exit(1)


def _reread(root: Array | Group, name: str) -> npt.NDArray[Any]:
    """The demo's array `name` below `root`, read back whole."""
    member = root[name]
    if not isinstance(member, Array):
        raise ZarrcoreError(f"{member.name}: the demo's array is a group")
    values: npt.NDArray[Any] = member[...]
    return values


def cmd_verify(args: argparse.Namespace) -> int:
    report: VerifyReport
    if args.dst is None:
        if args.values or args.objects:
            raise ValueError("--values and --objects compare a copy: give SRC and DST")
        report = verify(
            *_locate(args.src),
            missing=args.missing,
            require_checksums=args.require_checksums,
            progress=_progress(args),
            storage_options=_storage_options(args),
        )
    else:
        if args.missing or args.require_checksums:
            raise ValueError(
                "--missing and --require-checksums check one PATH; comparing SRC "
                "with DST checks every key or value"
            )
        (src, src_path), (dst, dst_path) = _locate(args.src), _locate(args.dst)
        if args.values and args.objects:
            raise ValueError("--values and --objects are two ways to compare: give one")
        values = True if args.values else False if args.objects else None
        report = compare(
            src,
            dst,
            source_path=src_path,
            dest_path=dst_path,
            values=values,
            progress=_progress(args),
            source_storage_options=_storage_options(args, "src"),
            dest_storage_options=_storage_options(args, "dst"),
        )
    print(json.dumps(report.to_json(), indent=2) if args.json else report)
    return 0 if report.ok else 1


def _interruptible(
    args: argparse.Namespace, name: str, run: Callable[[], ConvertReport | CopyReport]
) -> int | None:
    """Print the report of `run()`; Ctrl-C says how to go on (exit status 130)."""
    try:
        report = run()
    except KeyboardInterrupt:
        print(
            f"zarrcore {name}: interrupted; run it again with --resume to finish", file=sys.stderr
        )
        return 130
    _print_report(args, report)
    return None


def cmd_convert(args: argparse.Namespace) -> int | None:
    (src, src_path), (dst, dst_path) = _locate(args.src), _locate(args.dst)
    return _interruptible(
        args,
        "convert",
        lambda: convert(
            src,
            dst,
            source_path=src_path,
            dest_path=dst_path,
            zarr_format=args.zarr_format,
            chunks=args.chunks,
            shards=args.shards,
            codecs=args.codecs,
            compressor=args.compressor,
            dtype=args.dtype,
            dimension_names=(
                None if args.dimension_names is None else args.dimension_names.split(",")
            ),
            memory=args.memory,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=_progress(args),
            source_storage_options=_storage_options(args, "src"),
            dest_storage_options=_storage_options(args, "dst"),
        ),
    )


def cmd_copy(args: argparse.Namespace) -> int | None:
    (src, src_path), (dst, dst_path) = _locate(args.src), _locate(args.dst)
    return _interruptible(
        args,
        "copy",
        lambda: copy(
            src,
            dst,
            source_path=src_path,
            dest_path=dst_path,
            overwrite=args.overwrite,
            resume=args.resume,
            progress=_progress(args),
            source_storage_options=_storage_options(args, "src"),
            dest_storage_options=_storage_options(args, "dst"),
        ),
    )


def _print_report(args: argparse.Namespace, report: ConvertReport | CopyReport) -> None:
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    elif not args.quiet:
        print(report)


def _progress(args: argparse.Namespace) -> bool | None:
    """progress= for the tools: off with --quiet, else a line when stderr is a terminal."""
    return False if args.quiet else None


# The tools' parameters whose flags are spelled otherwise.
_FLAG_OF_PARAMETER = {
    "source_storage_options": "--src-storage-options",
    "dest_storage_options": "--dst-storage-options",
}


def _in_flags(message: str, command: argparse.ArgumentParser) -> str:
    """`message` with the Python parameters it names (`shards=(8, 8)`, `resume=True`,
    `zarr_format=3`, `dtype=`) spelled as the flags of `command`'s parser."""
    flags = dict(_FLAG_OF_PARAMETER)
    for action in command._actions:
        longest = max(action.option_strings, key=len, default="")
        if longest.startswith("--"):
            flags[action.dest] = longest

    def flag(m: re.Match[str]) -> str:
        name = flags[m.group(1)]
        if m.group(2):  # name=True: the flag alone
            return name
        rest = m.string[m.end() : m.end() + 1]
        return name + ("" if rest in ("", " ", ")", ",", ";", ":") else " ")

    # (not keywords of a repr in the message: "ShardingCodec(..., codecs=[...])")
    pattern = r"(?<!\()(?<!, )\b(" + "|".join(map(re.escape, flags)) + r")=(True\b)?"
    return re.sub(pattern, flag, message)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zarrcore", description=__doc__)
    parser.add_argument("--version", action="version", version=f"zarrcore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, argparse.ArgumentParser] = {}
    for name, func, text in (
        ("info", cmd_info, "summary of an array or group"),
        ("tree", cmd_tree, "the hierarchy below a group"),
        ("demo", cmd_demo, "write, re-read and verify an example dataset"),
    ):
        p = commands[name] = sub.add_parser(name, help=text)
        p.add_argument("path", help="a directory, a .zip, or a URL (s3://, gs://, http://, ...)")
        p.set_defaults(func=func)
        p.add_argument(
            "--storage-options",
            metavar="JSON",
            help='options of a URL\'s store, e.g. {"endpoint_url": "http://..."}',
        )
        if name != "demo":
            p.add_argument("--json", action="store_true", help="print JSON")
    p = commands["verify"] = sub.add_parser(
        "verify",
        help="decode every stored chunk of PATH and report damage; or compare DST, "
        "a copy, with SRC, its source",
        usage="%(prog)s [options] PATH | SRC DST",
    )
    p.add_argument(
        "src", metavar="PATH|SRC", help="what to check; or the source of a copy, with DST"
    )
    p.add_argument(
        "dst",
        metavar="DST",
        nargs="?",
        help="a copy of SRC: compare each stored key (as copy writes them) where DST "
        "stores every array as SRC does, else each array's values (as convert "
        "writes them), saying so",
    )
    p.add_argument(
        "--values",
        action="store_true",
        help="compare DST with SRC value by value (exactly: see the guide)",
    )
    p.add_argument(
        "--objects", action="store_true", help="compare DST with SRC stored object by stored object"
    )
    p.add_argument(
        "--missing",
        action="store_true",
        help="report chunks (and inner chunks) that are not stored",
    )
    p.add_argument(
        "--require-checksums",
        action="store_true",
        help="fail on arrays whose stored objects carry no checksum",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=cmd_verify)
    p = commands["convert"] = sub.add_parser(
        "convert",
        help="rewrite an array or hierarchy: format, chunks, shards, codecs, data "
        "type; streaming, parallel, resumable",
    )
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--zarr-format", type=int, choices=(2, 3))
    p.add_argument(
        "--chunks",
        help="chunk shape (inner chunks when sharded), e.g. 64,64,64, "
        "or a rectilinear grid's edge lengths per axis, e.g. "
        "'[[10,5,15],64]'",
    )
    p.add_argument(
        "--shards",
        help="shard shape, e.g. 512,512,512, edge lengths per axis as for --chunks, or none",
    )
    p.add_argument(
        "--compressor",
        help="zstd:LEVEL, blosc:CNAME:LEVEL[:SHUFFLE], gzip:LEVEL, "
        "zlib:LEVEL, lz4, none, or codec JSON",
    )
    p.add_argument(
        "--codecs",
        help="the chunk codecs as a v3 JSON list, e.g. "
        '\'[{"name": "bytes"}, {"name": "zstd"}]\' (short forms '
        "such as zstd:3 go to --compressor)",
    )
    p.add_argument(
        "--dtype",
        help="a new data type; every value must convert to it exactly "
        "(checked as the chunks are converted)",
    )
    p.add_argument("--dimension-names", help="comma-separated (default: _ARRAY_DIMENSIONS of v2)")
    p.add_argument("--memory", default="1GiB", help="bound on data held at once (default 1GiB)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted conversion")
    p.add_argument("--overwrite", action="store_true", help="replace what is at DST")
    p.set_defaults(func=cmd_convert)
    q = commands["copy"] = sub.add_parser(
        "copy", help="copy stored bytes from one store to another, in parallel"
    )
    q.add_argument("src")
    q.add_argument("dst")
    q.add_argument("--overwrite", action="store_true", help="replace what is at DST")
    q.add_argument("--resume", action="store_true", help="finish an interrupted copy")
    q.set_defaults(func=cmd_copy)
    for p in (commands["convert"], q):
        p.add_argument("--json", action="store_true", help="print the report as JSON")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress line, no report")
    for p in (commands["convert"], q, commands["verify"]):
        p.add_argument(
            "--storage-options",
            metavar="JSON",
            help="options of the stores of the arguments that are URLs (of both "
            "when neither is; JSON object)",
        )
        p.add_argument("--src-storage-options", metavar="JSON", help="for SRC only")
        p.add_argument("--dst-storage-options", metavar="JSON", help="for DST only")
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's usage, not the top level's
        command = commands[args.command]
        known = [o for a in command._actions for o in a.option_strings]
        hints = [
            f"{u} (did you mean {close[0]}?)" if close else u
            for u in unknown
            for close in [difflib.get_close_matches(u, known, 1)]
        ]
        command.error(f"unrecognized arguments: {' '.join(hints)}")
    try:
        status = args.func(args) or 0
        sys.stdout.flush()  # here, so that a closed pipe is seen below, not at exit
        return status
    except BrokenPipeError:
        # The reader (`| head`) has gone: as Python's documentation advises, the rest of
        # the output goes to devnull, so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ZarrcoreError, OSError, ValueError) as e:
        print(
            f"zarrcore {args.command}: {_in_flags(str(e), commands[args.command])}", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        print(f"zarrcore {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
