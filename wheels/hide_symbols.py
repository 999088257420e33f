"""Hide the global symbols of a static archive of Mach-O objects, in place.

    python wheels/hide_symbols.py ARCHIVE...

zig's Mach-O linker takes no export list (`-exported_symbol`, `-exported_symbols_list`), so a
macOS extension built by it exports every global symbol of what it links. zarrcore's own C is
compiled with `-fvisibility=hidden`, which leaves only `PyInit_<module>` global; python-blosc's
`libblosc.a` is not. This marks every global definition of the archive's objects private
extern (`N_PEXT`, what the compiler writes for a hidden symbol), so that the linker still
resolves them between the objects of one extension but exports none of them, as
`-exported_symbol` does with Apple's linker. Only the symbol tables' type bytes change: the
archive keeps its size, members and index.
"""
import pathlib
import struct
import sys

MH_MAGIC_64, MH_OBJECT, LC_SYMTAB = 0xFEEDFACF, 0x1, 0x2
N_STAB, N_PEXT, N_TYPE, N_EXT, N_UNDF = 0xE0, 0x10, 0x0E, 0x01, 0x0
NLIST_64 = struct.Struct("<IBBHQ")


class ArchiveError(ValueError):
    """A file that is not an archive of 64-bit Mach-O objects."""


def members(data):
    """(name, offset of its contents, size of its contents) of each member of a BSD or GNU
    `ar` archive given as bytes."""
    if data[:8] != b"!<arch>\n":
        raise ArchiveError("not an ar archive")
    at = 8
    while at < len(data):
        if at + 60 > len(data) or data[at + 58:at + 60] != b"`\n":
            raise ArchiveError(f"bad member header at {at}")
        name = data[at:at + 16].decode("ascii", "replace").rstrip()
        size = int(data[at + 48:at + 58])
        start, length = at + 60, size
        if name.startswith("#1/"):  # BSD: the name follows the header, counted in the size
            extra = int(name[3:])
            name = data[start:start + extra].rstrip(b"\0").decode("utf-8", "replace")
            start, length = start + extra, size - extra
        if start + length > len(data):
            raise ArchiveError(f"member {name} runs past the end of the archive")
        yield name, start, length
        at = at + 60 + size
        at += at & 1


def hide_object(data, start, length):
    """Mark the global definitions (common symbols too) of the Mach-O object at
    data[start:start + length] private extern, in the bytearray `data`: their names."""
    if length < 32 or struct.unpack_from("<I", data, start)[0] != MH_MAGIC_64:
        raise ArchiveError("not a 64-bit Mach-O object")
    filetype, ncmds, sizeofcmds = struct.unpack_from("<III", data, start + 12)
    if filetype != MH_OBJECT or 32 + sizeofcmds > length:
        raise ArchiveError("not a Mach-O object file")
    hidden, at = [], start + 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if size < 8 or at + size > start + 32 + sizeofcmds:
            raise ArchiveError(f"load command {cmd:#x} of bad size {size}")
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", data, at + 8)
            if (symoff + nsyms * NLIST_64.size > length or stroff + strsize > length):
                raise ArchiveError("symbol table past the end of the object")
            for k in range(nsyms):
                entry = start + symoff + k * NLIST_64.size
                strx, ntype, _, _, value = NLIST_64.unpack_from(data, entry)
                if ntype & N_STAB or not ntype & N_EXT or ntype & N_PEXT:
                    continue
                # A definition in a section or absolute, or a common symbol (undefined with
                # a size); references to other objects and libraries stay as they are.
                if ntype & N_TYPE != N_UNDF or value != 0:
                    data[entry + 4] = ntype | N_PEXT
                    end = data.index(b"\0", start + stroff + strx)
                    hidden.append(data[start + stroff + strx:end].decode("utf-8", "replace"))
        at += size
    return hidden


def hide_archive(path):
    """Hide every global definition of the archive's Mach-O objects, rewriting the file;
    the names hidden."""
    path = pathlib.Path(path)
    data = bytearray(path.read_bytes())
    hidden = []
    for name, start, length in list(members(bytes(data))):
        if name.startswith("__.SYMDEF") or name in ("/", "//", "/SYM64/"):
            continue  # the archive's index
        try:
            hidden += hide_object(data, start, length)
        except (ArchiveError, struct.error) as e:
            raise ArchiveError(f"{path}({name}): {e}") from None
    path.write_bytes(data)
    return hidden


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for arg in argv:
        print(f"{arg}: {len(hide_archive(arg))} global symbols hidden")
    return 0


if __name__ == "__main__":
    sys.exit(main())
