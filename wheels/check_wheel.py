"""Check that zarrcore wheels, or an installed zarrcore, are self-contained.

    python wheels/check_wheel.py WHEEL_OR_DIRECTORY...
    python wheels/check_wheel.py --installed

Each compiled extension must need no shared library beyond the system's C runtime, search no
directory of the machine it was built on (no ELF RPATH or RUNPATH), and export nothing but its
PyInit_ function (the statically linked blosc, zstd, lz4 and zlib stay private, so they
cannot clash with another copy in the process): ELF (Linux: glibc's libraries, or musl's
libc), Mach-O (macOS: libSystem; the exports of its export trie, which may also name the two
header symbols zig's linker defines) and PE (Windows: KERNEL32, the Universal CRT's
api-ms-win-crt-*, VCRUNTIME140 and pythonXY.dll), read here without binutils. Every .pyx
below zarrcore/ must have its extension, and the public .pxd files and header must be there
for `cimport zarrcore.kernels`, `cimport zarrcore.array_api` and
`#include <zarrcore/array_api.h>`; a wheel must hold
nothing else of zarrcore's but Python modules. Its SBOM (`<dist-info>/sboms/`, PEP 770,
written by wheels/sbom.py) must name every library the extensions link statically (c-blosc,
zstd, lz4, zlib) at a version compiled into the extensions, and each licence file it names
must be in `<dist-info>/licenses/`.
Exits 1 and names every problem when a check fails.
"""
import pathlib
import re
import struct
import sys
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sbom  # noqa: E402  (wheels/sbom.py)

# glibc's libraries, present on every manylinux system, and musl's libc (one library, named
# after its dynamic loader), present on every musllinux system.
ALLOWED_NEEDED = {
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
    "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1",
}
# macOS: the C library and system calls. The core is C, so no libc++; Python's own symbols
# are looked up at load time (-undefined dynamic_lookup), so no libpython either.
MACHO_ALLOWED = {"/usr/lib/libSystem.B.dylib"}
# Windows (case-insensitive): what an MSVC-built C extension of CPython links, /MD.
PE_ALLOWED = re.compile(r"kernel32\.dll|vcruntime140\.dll|api-ms-win-crt-[a-z0-9-]+\.dll|"
                        r"python3\d*\.dll", re.IGNORECASE)
# Public files beside the Python modules, with what needs each (PEP 561's marker: the package's
# annotations, and the .pyi stubs of its extensions, are for type checkers).
PUBLIC_FILES = {
    "kernels.pxd": "`cimport zarrcore.kernels`",
    "array_api.pxd": "`cimport zarrcore.array_api`",
    "array_api.h": "`#include <zarrcore/array_api.h>`",
    "py.typed": "type checkers, which otherwise ignore the annotations",
}
# One extension per Cython module of the checkout this script belongs to, by its path below
# zarrcore/ without the suffix ("kernels", "_native/memory").
_PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "zarrcore"
EXTENSIONS = sorted(p.relative_to(_PACKAGE).with_suffix("").as_posix()
                    for p in _PACKAGE.rglob("*.pyx"))

SHT_DYNSYM, SHT_DYNAMIC = 11, 6
DT_NULL, DT_NEEDED, DT_RPATH, DT_RUNPATH = 0, 1, 15, 29
STB_GLOBAL, STB_WEAK = 1, 2
SHN_UNDEF = 0


class BinaryError(ValueError):
    """An extension file that cannot be read as the binary format it claims."""


ElfError = MachOError = PeError = BinaryError


def _string(table, offset):
    end = table.find(b"\0", offset)
    if end < 0:
        raise ElfError(f"string at {offset} runs past its table")
    return table[offset:end].decode("utf-8", "replace")


def elf_dynamic_info(data):
    """(needed libraries, exported symbols) of an ELF shared object given as bytes."""
    strings, exported = _elf_dynamic(data)
    return strings[DT_NEEDED], exported


def elf_search_paths(data):
    """The RPATH and RUNPATH entries of an ELF shared object given as bytes."""
    strings, _ = _elf_dynamic(data)
    return strings[DT_RPATH] + strings[DT_RUNPATH]


def _elf_dynamic(data):
    """({DT_NEEDED, DT_RPATH, DT_RUNPATH: their strings}, exported symbols) of an ELF file."""
    if data[:4] != b"\x7fELF" or len(data) < 64:
        raise ElfError("not an ELF file")
    wide = {1: False, 2: True}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if wide is None or order is None:
        raise ElfError("unknown ELF class or byte order")
    if wide:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        sect_fmt, dyn_fmt, sym_fmt = order + "IIQQQQIIQQ", order + "qQ", order + "IBBHQQ"
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        sect_fmt, dyn_fmt, sym_fmt = order + "IIIIIIIIII", order + "iI", order + "IIIBBH"
    if shoff + shentsize * shnum > len(data) or shentsize < struct.calcsize(sect_fmt):
        raise ElfError("section headers past the end of the file")
    sections = []
    for k in range(shnum):
        f = struct.unpack_from(sect_fmt, data, shoff + k * shentsize)
        # name, type, flags, addr, offset, size, link, info, addralign, entsize
        sections.append({"type": f[1], "offset": f[4], "size": f[5], "link": f[6]})

    def body(section):
        start, size = section["offset"], section["size"]
        if start + size > len(data):
            raise ElfError("section past the end of the file")
        return data[start:start + size]

    def linked_strings(section):
        if section["link"] >= len(sections):
            raise ElfError("section links to no string table")
        return body(sections[section["link"]])

    dynamic, exported = {DT_NEEDED: [], DT_RPATH: [], DT_RUNPATH: []}, []
    for section in sections:
        if section["type"] == SHT_DYNAMIC:
            strings, raw, step = linked_strings(section), body(section), struct.calcsize(dyn_fmt)
            for at in range(0, len(raw) - step + 1, step):
                tag, value = struct.unpack_from(dyn_fmt, raw, at)
                if tag == DT_NULL:
                    break
                if tag in dynamic:
                    dynamic[tag].append(_string(strings, value))
        elif section["type"] == SHT_DYNSYM:
            strings, raw, step = linked_strings(section), body(section), struct.calcsize(sym_fmt)
            for at in range(0, len(raw) - step + 1, step):
                f = struct.unpack_from(sym_fmt, raw, at)
                name, info, other, shndx = (f[0], f[1], f[2], f[3]) if wide else (f[0], f[3], f[4], f[5])
                binding, visibility = info >> 4, other & 3
                if binding in (STB_GLOBAL, STB_WEAK) and shndx != SHN_UNDEF and visibility == 0:
                    exported.append(_string(strings, name))
    return dynamic, exported


MH_MAGIC_64, MH_MAGIC, FAT_MAGIC, FAT_MAGIC_64 = 0xFEEDFACF, 0xFEEDFACE, 0xCAFEBABE, 0xCAFEBABF
LC_SYMTAB = 0x2
# Where dyld finds what an image exports: the export trie of LC_DYLD_INFO(_ONLY) or
# LC_DYLD_EXPORTS_TRIE. An image with one exports what it names, whatever its symbol table says.
LC_DYLD_INFO, LC_DYLD_INFO_ONLY, LC_DYLD_EXPORTS_TRIE = 0x22, 0x80000022, 0x80000033
# Symbols the linker defines in every image, at its own Mach-O header: zig's linker exports
# them, Apple's keeps them private. They are no library code, and a reference to them binds
# within its own image at link time, so they cannot clash with another image's.
MACHO_LINKER_SYMBOLS = {"_mh_dylib_header", "_mh_bundle_header", "__dso_handle"}
# Load commands naming a dylib the image needs: LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB,
# LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB.
LC_DYLIBS = {0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023}
N_STAB, N_PEXT, N_TYPE, N_EXT, N_SECT = 0xE0, 0x10, 0x0E, 0x01, 0x0E


def _uleb128(data, at):
    """(value, offset past it) of the unsigned LEB128 number at data[at]."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise MachOError("export trie runs past its end")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def macho_export_trie(trie):
    """The names (with their leading '_') an export trie, given as bytes, exports."""
    names, pending, seen = [], [(0, b"")], set()
    while pending:
        node, prefix = pending.pop()
        if node in seen or node >= len(trie):
            raise MachOError(f"export trie node at {node} out of place")
        seen.add(node)
        terminal, at = _uleb128(trie, node)
        if terminal:
            names.append(prefix.decode("utf-8", "replace"))
        at += terminal
        if at >= len(trie):
            raise MachOError("export trie runs past its end")
        children, at = trie[at], at + 1
        for _ in range(children):
            end = trie.find(b"\0", at)
            if end < 0:
                raise MachOError("export trie edge runs past its end")
            edge, at = trie[at:end], end + 1
            child, at = _uleb128(trie, at)
            pending.append((child, prefix + edge))
    return sorted(names)


def macho_dynamic_info(data):
    """(needed dylibs, exported symbols without their leading '_') of a Mach-O image given as
    bytes; of every architecture of a universal one. The exports are those of its export trie
    where it has one (what dyld reads), else the external definitions of its symbol table."""
    if len(data) < 8:
        raise MachOError("not a Mach-O file")
    magic, = struct.unpack_from(">I", data, 0)
    if magic in (FAT_MAGIC, FAT_MAGIC_64):
        count, = struct.unpack_from(">I", data, 4)
        entry = ">iiQQI" if magic == FAT_MAGIC_64 else ">iiIII"
        step = struct.calcsize(entry) + (4 if magic == FAT_MAGIC_64 else 0)
        if 8 + count * step > len(data):
            raise MachOError("universal header past the end of the file")
        needed, exported = [], []
        for k in range(count):
            _, _, offset, size, _ = struct.unpack_from(entry, data, 8 + k * step)
            if offset + size > len(data):
                raise MachOError("architecture slice past the end of the file")
            n, e = macho_dynamic_info(data[offset:offset + size])
            needed += [x for x in n if x not in needed]
            exported += [x for x in e if x not in exported]
        return needed, exported
    magic, = struct.unpack_from("<I", data, 0)  # every macOS architecture is little-endian
    if magic not in (MH_MAGIC_64, MH_MAGIC) or len(data) < 32:
        raise MachOError("not a Mach-O file")
    wide = magic == MH_MAGIC_64
    header = 32 if wide else 28
    ncmds, sizeofcmds = struct.unpack_from("<II", data, 16)
    if header + sizeofcmds > len(data):
        raise MachOError("load commands past the end of the file")
    needed, exported, trie, at = [], [], None, header
    for _ in range(ncmds):
        if at + 8 > header + sizeofcmds:
            raise MachOError("load commands past their declared size")
        cmd, size = struct.unpack_from("<II", data, at)
        if size < 8 or at + size > header + sizeofcmds:
            raise MachOError(f"load command {cmd:#x} of bad size {size}")
        body = data[at:at + size]
        if cmd in LC_DYLIBS:
            name_at, = struct.unpack_from("<I", body, 8)
            if not 24 <= name_at < size:
                raise MachOError("dylib name outside its load command")
            needed.append(_string(body, name_at))
        elif cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", body, 8)
            entry = "<IBBHQ" if wide else "<IBBHI"
            step = struct.calcsize(entry)
            if symoff + nsyms * step > len(data) or stroff + strsize > len(data):
                raise MachOError("symbol table past the end of the file")
            strings = data[stroff:stroff + strsize]
            for k in range(nsyms):
                strx, ntype, _, _, _ = struct.unpack_from(entry, data, symoff + k * step)
                if (not ntype & N_STAB and ntype & N_EXT and not ntype & N_PEXT
                        and ntype & N_TYPE == N_SECT):
                    exported.append(_string(strings, strx))
        elif cmd in (LC_DYLD_INFO, LC_DYLD_INFO_ONLY, LC_DYLD_EXPORTS_TRIE):
            trie_off, trie_size = struct.unpack_from(
                "<II", body, 8 if cmd == LC_DYLD_EXPORTS_TRIE else 40)
            if trie_off + trie_size > len(data):
                raise MachOError("export trie past the end of the file")
            if trie_size:
                trie = (trie or []) + macho_export_trie(data[trie_off:trie_off + trie_size])
        at += size
    names = exported if trie is None else trie
    return needed, [name[1:] if name.startswith("_") else name for name in names]


def macho_undefined(data):
    """The external symbols a Mach-O image (every slice of a universal one) leaves undefined,
    with their leading '_': what it binds at load time."""
    magic, = struct.unpack_from(">I", data, 0)
    if magic in (FAT_MAGIC, FAT_MAGIC_64):
        count, = struct.unpack_from(">I", data, 4)
        entry = ">iiQQI" if magic == FAT_MAGIC_64 else ">iiIII"
        step = struct.calcsize(entry) + (4 if magic == FAT_MAGIC_64 else 0)
        names = set()
        for k in range(count):
            _, _, offset, size, _ = struct.unpack_from(entry, data, 8 + k * step)
            names |= macho_undefined(data[offset:offset + size])
        return names
    wide = struct.unpack_from("<I", data, 0)[0] == MH_MAGIC_64
    ncmds, = struct.unpack_from("<I", data, 16)
    names, at = set(), 32 if wide else 28
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", data, at + 8)
            strings = data[stroff:stroff + strsize]
            entry = "<IBBHQ" if wide else "<IBBHI"
            step = struct.calcsize(entry)
            for k in range(nsyms):
                strx, ntype, _, _, _ = struct.unpack_from(entry, data, symoff + k * step)
                if not ntype & N_STAB and ntype & N_EXT and ntype & N_TYPE == 0:
                    names.add(_string(strings, strx))
        at += size
    return names


def _pe_sections(data):
    """(optional header offset, PE32+?, section table) of a PE image."""
    if data[:2] != b"MZ" or len(data) < 0x40:
        raise PeError("not a PE file")
    pe, = struct.unpack_from("<I", data, 0x3C)
    if data[pe:pe + 4] != b"PE\0\0" or pe + 24 > len(data):
        raise PeError("not a PE file")
    nsections, = struct.unpack_from("<H", data, pe + 6)
    optsize, = struct.unpack_from("<H", data, pe + 20)
    opt = pe + 24
    magic, = struct.unpack_from("<H", data, opt)
    if magic not in (0x10B, 0x20B):
        raise PeError(f"unknown optional header magic {magic:#x}")
    table = opt + optsize
    if table + 40 * nsections > len(data):
        raise PeError("section table past the end of the file")
    sections = [struct.unpack_from("<8xIIII", data, table + 40 * k) for k in range(nsections)]
    return opt, magic == 0x20B, sections  # (virtual size, address, raw size, raw offset)


def _pe_layout(data):
    """(PE32+?, file offset of an address, (address, size) of a data directory) of a PE
    image."""
    opt, plus, sections = _pe_sections(data)

    def offset(rva):
        for vsize, vaddr, rsize, raw in sections:
            if vaddr <= rva < vaddr + max(vsize, rsize):
                if rva - vaddr >= rsize or raw + rva - vaddr >= len(data):
                    break
                return raw + rva - vaddr
        raise PeError(f"address {rva:#x} is in no section of the file")

    count, = struct.unpack_from("<I", data, opt + (108 if plus else 92))
    directories = opt + (112 if plus else 96)

    def directory(index):
        if index >= count:
            return 0, 0
        return struct.unpack_from("<II", data, directories + 8 * index)

    return plus, offset, directory


def _pe_descriptors(data, offset, directory, index, step):
    """File offsets of the descriptors of the import (index 1, 20 bytes each) or delay-load
    (13, 32 bytes) table, which a zeroed descriptor ends."""
    rva, _ = directory(index)
    if rva == 0:
        return
    at = offset(rva)
    while True:
        if at + step > len(data):
            raise PeError("import table past the end of the file")
        if data[at:at + step] == bytes(step):
            return
        yield at
        at += step


def pe_imports(data):
    """[(DLL, file offset of its name, [names imported from it])] of a PE image's import
    table; imports by ordinal appear as "#ordinal"."""
    plus, offset, directory = _pe_layout(data)
    entry, by_ordinal = ("<Q", 1 << 63) if plus else ("<I", 1 << 31)
    imports = []
    for at in _pe_descriptors(data, offset, directory, 1, 20):
        lookup, _, _, name_rva, thunks = struct.unpack_from("<IIIII", data, at)
        names, table = [], offset(lookup or thunks)
        while True:
            value, = struct.unpack_from(entry, data, table)
            if value == 0:
                break
            names.append(f"#{value & 0xFFFF}" if value & by_ordinal
                         else _string(data, offset(value & 0x7FFFFFFF) + 2))
            table += struct.calcsize(entry)
        imports.append((_string(data, offset(name_rva)), offset(name_rva), names))
    return imports


def pe_dynamic_info(data):
    """(imported DLLs, exported names) of a PE image (a .pyd) given as bytes; exports by
    ordinal only appear as "#ordinal"."""
    plus, offset, directory = _pe_layout(data)
    # The import table (name at 12 of each descriptor) and the delay-load table (at 4).
    needed = [_string(data, offset(struct.unpack_from("<I", data, at + name_at)[0]))
              for index, step, name_at in ((1, 20, 12), (13, 32, 4))
              for at in _pe_descriptors(data, offset, directory, index, step)]
    exported = []
    rva, size = directory(0)
    if rva:
        at = offset(rva)
        base, nfunctions, nnames, functions_rva, names_rva, ordinals_rva = struct.unpack_from(
            "<IIIIII", data, at + 16)
        named = set()
        for k in range(nnames):
            name_rva, = struct.unpack_from("<I", data, offset(names_rva) + 4 * k)
            ordinal, = struct.unpack_from("<H", data, offset(ordinals_rva) + 2 * k)
            exported.append(_string(data, offset(name_rva)))
            named.add(ordinal)
        for k in range(nfunctions):
            address, = struct.unpack_from("<I", data, offset(functions_rva) + 4 * k)
            if address and k not in named:
                exported.append(f"#{base + k}")
    return needed, exported


def dynamic_info(data):
    """(needed libraries, exported symbols, whether a library is allowed, the exports allowed
    besides the module's PyInit_) of an extension in whichever binary format it is."""
    if data[:4] == b"\x7fELF":
        return (*elf_dynamic_info(data), ALLOWED_NEEDED.__contains__, set())
    if data[:2] == b"MZ":
        return (*pe_dynamic_info(data), lambda lib: PE_ALLOWED.fullmatch(lib) is not None,
                set())
    if len(data) >= 4 and (struct.unpack_from("<I", data, 0)[0] in (MH_MAGIC_64, MH_MAGIC) or
                           struct.unpack_from(">I", data, 0)[0] in (FAT_MAGIC, FAT_MAGIC_64)):
        return (*macho_dynamic_info(data), MACHO_ALLOWED.__contains__, MACHO_LINKER_SYMBOLS)
    raise BinaryError("not an ELF, Mach-O or PE file")


def check_extension(label, data):
    """Problems with one compiled extension module (its file name in `label`)."""
    module = pathlib.PurePosixPath(label).name.split(".")[0]
    try:
        needed, exported, allowed, tolerated = dynamic_info(data)
    except (BinaryError, struct.error) as e:
        return [f"{label}: {e}"]
    problems = [f"{label}: needs {lib}" for lib in needed if not allowed(lib)]
    if data[:4] == b"\x7fELF":
        problems += [f"{label}: searches {path} for libraries (RPATH or RUNPATH)"
                     for path in elf_search_paths(data)]
    extra = sorted(set(exported) - {f"PyInit_{module}"} - tolerated)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        problems.append(f"{label}: exports {shown}")
    return problems


def check_sbom(files, extensions):
    """Problems with the SBOM of a package given as in check_files, whose extensions are
    `extensions` (paths): it must name each library of wheels/sbom.py at a version compiled
    into the extensions, with its licence file shipped."""
    found = [n for n in files if re.fullmatch(
        r"[^/]+\.dist-info/sboms/" + re.escape(sbom.SBOM_NAME), n)]
    if len(found) != 1:
        return [f"<dist-info>/sboms/{sbom.SBOM_NAME}: {len(found)} found, 1 expected"]
    distinfo = found[0].split("/")[0]
    try:
        components = sbom.read_components(files[found[0]]().decode("utf-8"))
    except (sbom.SbomError, UnicodeDecodeError) as e:
        return [f"{found[0]}: {e}"]
    binaries = b"".join(files[name]() for name in extensions)
    problems = [f"{found[0]}: names {name}, which is not among the libraries linked"
                for name in sorted(set(components) - {lib.name for lib in sbom.LIBRARIES})]
    for library in sbom.LIBRARIES:
        if library.name not in components:
            problems.append(f"{found[0]}: does not name {library.name}, which the extensions "
                            f"link")
            continue
        version, _, licence_file = components[library.name]
        if not sbom.versions_in(library, binaries, version):
            problems.append(f"{found[0]}: {library.name} {version} is not what the extensions "
                            f"link (no such version compiled in)")
        if f"{distinfo}/licenses/{licence_file}" not in files:
            problems.append(f"{found[0]}: {library.name}'s licence file {licence_file} is not "
                            f"in {distinfo}/licenses")
    return problems


def check_files(files, only_shipped=False):
    """Problems with a package given as {path relative to site-packages: bytes loader}, its
    dist-info directory included; with `only_shipped`, any file but Python modules, extensions
    and public build inputs is one."""
    problems = []
    extensions = {}
    for name in files:
        path = pathlib.PurePosixPath(name)
        if name.endswith("/") or path.parts[0] != "zarrcore":  # zip directory entries too
            continue
        if path.suffix in (".so", ".pyd"):
            extensions["/".join((*path.parts[1:-1], path.name.split(".")[0]))] = name
        elif only_shipped and path.suffix not in (".py", ".pyi") and not (
                len(path.parts) == 2 and path.name in PUBLIC_FILES):
            problems.append(f"{name}: not meant to be shipped (a stale build directory?)")
    for module in EXTENSIONS:
        if module not in extensions:
            problems.append(f"zarrcore/{module}: no compiled extension")
    if EXTENSIONS:  # (known where the checkout's .pyx files are)
        problems += [f"{name}: no .pyx builds it (a stale build directory?)"
                     for module, name in sorted(extensions.items()) if module not in EXTENSIONS]
    for name in sorted(extensions.values()):
        problems += check_extension(name, files[name]())
    for name, needed_by in PUBLIC_FILES.items():
        if f"zarrcore/{name}" not in files:
            problems.append(f"zarrcore/{name}: missing (needed by {needed_by})")
    return problems + check_sbom(files, sorted(extensions.values()))


def check_wheel(path):
    with zipfile.ZipFile(path) as wheel:
        return check_files({n: (lambda n=n: wheel.read(n)) for n in wheel.namelist()},
                           only_shipped=True)


def check_installed():
    import importlib.metadata

    import zarrcore

    root = pathlib.Path(zarrcore.__file__).resolve().parent.parent
    files = {p.relative_to(root).as_posix(): p.read_bytes
             for p in (root / "zarrcore").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    # The dist-info directory: the SBOM and the licences, as installed from the wheel.
    for f in importlib.metadata.distribution("zarrcore").files or ():
        if f.parts[0].endswith(".dist-info"):
            files[f.as_posix()] = f.locate().read_bytes
    return check_files(files)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    targets = []
    for arg in argv:
        if arg == "--installed":
            targets.append(("installed zarrcore", check_installed))
            continue
        path = pathlib.Path(arg)
        wheels = sorted(path.glob("zarrcore-*.whl")) if path.is_dir() else [path]
        if not wheels:
            print(f"{arg}: no zarrcore wheel there", file=sys.stderr)
            return 1
        targets += [(str(w), lambda w=w: check_wheel(w)) for w in wheels]
    failed = False
    for label, check in targets:
        problems = check()
        failed = failed or bool(problems)
        print(f"{label}: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
        for problem in problems:
            print(f"  {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
