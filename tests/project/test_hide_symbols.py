"""wheels/hide_symbols.py: the global definitions of a static archive of Mach-O objects made
private extern in place (what `make cross` does to python-blosc's macOS libblosc.a before zig
links it), on archives built here byte by byte."""
import struct

import pytest
from wheel_scripts import wheel_script

N_UNDF_EXT, N_SECT_EXT, N_SECT_PEXT, N_SECT_LOCAL, N_STAB_FUN = 0x01, 0x0F, 0x1F, 0x0E, 0x24


@pytest.fixture(scope="module")
def hide():
    return wheel_script("hide_symbols")


def macho_object(symbols):
    """A 64-bit Mach-O object (MH_OBJECT, arm64) with a symbol table of (name, n_type,
    n_value)."""
    symoff = 32 + 24
    strings, entries = b"\0", b""
    for name, ntype, value in symbols:
        entries += struct.pack("<IBBHQ", len(strings), ntype, 1 if ntype & 0x0E else 0, 0,
                               value)
        strings += name.encode() + b"\0"
    command = struct.pack("<IIIIII", 0x2, 24, symoff, len(symbols), symoff + len(entries),
                          len(strings))
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, 0x0100000C, 0, 1, 1, 24, 0, 0)
    return header + command + entries + strings


def bsd_archive(members):
    """A BSD `ar` archive of (name, bytes), names stored after the headers (`#1/N`)."""
    out = b"!<arch>\n"
    for name, data in members:
        raw = name.encode() + b"\0" * (-len(name) % 8 or 8)
        out += (f"#1/{len(raw):<13}{0:<12}{0:<6}{0:<6}{644:<8}{len(raw) + len(data):<10}`\n"
                .encode())
        out += raw + data
        if len(out) % 2:
            out += b"\n"
    return out


def symbol_types(data, hide):
    """{name: n_type} of every object of an archive."""
    types = {}
    for name, start, length in hide.members(data):
        if name.startswith("__.SYMDEF"):
            continue
        # (The objects above have one load command, LC_SYMTAB, right after the header.)
        symoff, nsyms, stroff = struct.unpack_from("<III", data, start + 32 + 8)
        for k in range(nsyms):
            strx, ntype = struct.unpack_from("<IB", data, start + symoff + 16 * k)
            end = data.index(b"\0", start + stroff + strx)
            types[data[start + stroff + strx:end].decode()] = ntype
    return types


def test_global_definitions_become_private_extern_and_nothing_else_changes(hide, tmp_path):
    archive = tmp_path / "libblosc.a"
    archive.write_bytes(bsd_archive([
        ("__.SYMDEF SORTED", b"\0" * 8),
        ("blosc.c.o", macho_object([("_blosc_compress", N_SECT_EXT, 0x10),
                                    ("_helper", N_SECT_LOCAL, 0x20),
                                    ("_malloc", N_UNDF_EXT, 0),
                                    ("_shared_table", N_UNDF_EXT, 64),  # a common symbol
                                    ("_blosc_compress", N_STAB_FUN, 0x10)])),
        ("zstd_compress.c.o", macho_object([("_ZSTD_compress", N_SECT_EXT, 0x0),
                                            ("_already_hidden", N_SECT_PEXT, 0x8)])),
    ]))
    before = archive.read_bytes()
    assert sorted(hide.hide_archive(archive)) == ["_ZSTD_compress", "_blosc_compress",
                                                  "_shared_table"]
    after = archive.read_bytes()
    assert len(after) == len(before)
    assert symbol_types(after, hide) == {
        "_blosc_compress": N_STAB_FUN,  # (the last entry of that name: its debug entry)
        "_helper": N_SECT_LOCAL, "_malloc": N_UNDF_EXT, "_shared_table": N_UNDF_EXT | 0x10,
        "_ZSTD_compress": N_SECT_PEXT, "_already_hidden": N_SECT_PEXT}
    # Only the type bytes of the three changed.
    assert sum(a != b for a, b in zip(before, after)) == 3
    # A second run finds nothing left to hide.
    assert hide.hide_archive(archive) == []
    assert archive.read_bytes() == after


def test_what_is_not_an_archive_of_macho_objects_is_refused(hide, tmp_path):
    path = tmp_path / "libblosc.a"
    for data in (b"not an archive", bsd_archive([("x.o", b"\x7fELF" + b"\0" * 60)]),
                 bsd_archive([("x.o", macho_object([])[:20])])):
        path.write_bytes(data)
        with pytest.raises(hide.ArchiveError):
            hide.hide_archive(path)
