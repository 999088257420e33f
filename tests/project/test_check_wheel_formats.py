"""wheels/check_wheel.py on macOS (Mach-O) and Windows (PE) extensions: what they link and
export. PE images are real DLLs cross-built with MinGW-w64 (when it is installed); Mach-O
images are built here byte by byte, since no Mach-O linker runs on this system."""
import json
import shutil
import struct
import subprocess
import zipfile

import pytest

pytestmark = pytest.mark.checks_linking

MINGW = "x86_64-w64-mingw32-gcc"
LIBSYSTEM = "/usr/lib/libSystem.B.dylib"
EXPORTED, PRIVATE_EXTERN, UNDEFINED = 0x0F, 0x1F, 0x01  # n_type: N_SECT|N_EXT, +N_PEXT, N_EXT
LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_SYMTAB = 0xC, 0x80000018, 0x2
LC_DYLD_INFO_ONLY = 0x80000022


def macho(dylibs, symbols, weak=()):
    """A 64-bit Mach-O bundle (x86_64) with these LC_LOAD_DYLIB (and weak) commands and a
    symbol table of (name, n_type)."""
    commands = b""
    for cmd, names in ((LC_LOAD_DYLIB, dylibs), (LC_LOAD_WEAK_DYLIB, weak)):
        for name in names:
            raw = name.encode() + b"\0"
            raw += b"\0" * (-len(raw) % 8)
            commands += struct.pack("<IIIIII", cmd, 24 + len(raw), 24, 2, 0x10000, 0x10000) + raw
    ncmds = len(dylibs) + len(weak) + 1
    sizeofcmds = len(commands) + 24
    symoff = 32 + sizeofcmds
    strings, entries = b"\0", b""
    for name, ntype in symbols:
        entries += struct.pack("<IBBHQ", len(strings), ntype, 1 if ntype != UNDEFINED else 0, 0,
                               0x1000)
        strings += b"_" + name.encode() + b"\0"
    commands += struct.pack("<IIIIII", LC_SYMTAB, 24, symoff, len(symbols),
                            symoff + len(entries), len(strings))
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, 0x01000007, 3, 8, ncmds, sizeofcmds, 0, 0)
    return header + commands + entries + strings


def export_trie(names):
    """An export trie naming these symbols (each with its leading '_'): a root whose edges are
    the whole names, each to a terminal node (flags 0, an address below 128)."""
    nodes, edges = [], b""
    for name in names:
        nodes.append(b"\x02\x00\x10\x00")  # terminal size 2: flags, address; no children
        edges += name.encode() + b"\0" + b"\xff"  # the child's offset, patched below
    root_size = 2 + len(edges)
    trie, at = bytearray(b"\x00" + bytes([len(names)])), root_size
    for name, node in zip(names, nodes):
        assert at < 128
        trie += name.encode() + b"\0" + bytes([at])
        at += len(node)
    return bytes(trie) + b"".join(nodes)


def with_export_trie(image, names):
    """A Mach-O image of macho() with an LC_DYLD_INFO_ONLY command whose export trie names
    these symbols: the command added after the others, the trie at the end of the file."""
    ncmds, sizeofcmds = struct.unpack_from("<II", image, 16)
    trie = export_trie(names)
    end = 32 + sizeofcmds
    # The symbol table and strings move 48 bytes down, past the new command.
    body = bytearray(image[end:])
    commands = bytearray(image[32:end])
    at = 0
    while at < len(commands):
        cmd, size = struct.unpack_from("<II", commands, at)
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", commands, at + 8)
            struct.pack_into("<IIII", commands, at + 8, symoff + 48, nsyms, stroff + 48, strsize)
        at += size
    trie_at = len(image) + 48
    commands += struct.pack("<12I", LC_DYLD_INFO_ONLY, 48, 0, 0, 0, 0, 0, 0, 0, 0, trie_at,
                            len(trie))
    header = bytearray(image[:32])
    struct.pack_into("<II", header, 16, ncmds + 1, sizeofcmds + 48)
    return bytes(header + commands + body) + trie


def universal(*slices):
    """A universal (fat) Mach-O file of these slices."""
    out = struct.pack(">II", 0xCAFEBABE, len(slices))
    at = 8 + 20 * len(slices)
    at += -at % 16
    body = b""
    for s in slices:
        out += struct.pack(">iiIII", 0x01000007, 3, at + len(body), len(s), 4)
        body += s + b"\0" * (-len(s) % 16)
    return out + b"\0" * (-len(out) % 16) + body


def good_macho(module):
    return macho([LIBSYSTEM], [(f"PyInit_{module}", EXPORTED), ("zc_pool_take", PRIVATE_EXTERN),
                               ("PyLong_FromLong", UNDEFINED)])


def test_a_macho_extension_linking_libsystem_and_exporting_its_init_passes(check_wheel):
    data = good_macho("kernels")
    assert check_wheel.macho_dynamic_info(data) == ([LIBSYSTEM], ["PyInit_kernels"])
    assert check_wheel.check_extension("zarrcore/kernels.cpython-311-darwin.so", data) == []
    assert check_wheel.macho_undefined(universal(data, data)) == {"_PyLong_FromLong"}
    assert check_wheel.check_extension("zarrcore/kernels.so", universal(data, data)) == []


def test_a_macho_extension_linking_or_exporting_more_fails(check_wheel):
    data = macho([LIBSYSTEM, "@rpath/libzstd.1.dylib"],
                 [("PyInit_kernels", EXPORTED), ("ZSTD_compress", EXPORTED)],
                 weak=["/usr/lib/libc++.1.dylib"])
    assert check_wheel.check_extension("zarrcore/kernels.so", data) == [
        "zarrcore/kernels.so: needs @rpath/libzstd.1.dylib",
        "zarrcore/kernels.so: needs /usr/lib/libc++.1.dylib",
        "zarrcore/kernels.so: exports ZSTD_compress",
    ]
    # In one slice of a universal file only: still found.
    assert check_wheel.check_extension("zarrcore/kernels.so", universal(good_macho("kernels"), data))


def test_a_macho_extension_s_exports_are_those_of_its_export_trie(check_wheel):
    # zig's linker: the trie names the header symbols it defines besides PyInit_; a symbol
    # table entry that is external but not in the trie is not exported.
    data = with_export_trie(
        macho([LIBSYSTEM], [("PyInit_kernels", EXPORTED), ("helper", EXPORTED)]),
        ["_PyInit_kernels", "__mh_dylib_header", "___dso_handle"])
    assert check_wheel.macho_dynamic_info(data) == (
        [LIBSYSTEM], ["PyInit_kernels", "__dso_handle", "_mh_dylib_header"])
    assert check_wheel.check_extension("zarrcore/kernels.so", data) == []
    bad = with_export_trie(good_macho("kernels"), ["_PyInit_kernels", "_ZSTD_compress"])
    assert check_wheel.check_extension("zarrcore/kernels.so", bad) == [
        "zarrcore/kernels.so: exports ZSTD_compress"]
    # A trie cut short, or with an edge to a node outside it, is reported, not crashed on.
    size = len(export_trie(["_PyInit_kernels", "_ZSTD_compress"]))
    outside = b"\x00\x01_A\x00\x7f"
    for broken in (bad[:-3], bad[:-size] + outside + b"\x00" * (size - len(outside))):
        problems = check_wheel.check_extension("zarrcore/kernels.so", broken)
        assert len(problems) == 1 and problems[0].startswith("zarrcore/kernels.so: "), problems


def test_a_truncated_macho_extension_is_reported_not_crashed_on(check_wheel):
    data = good_macho("kernels")
    for cut in (8, 40, len(data) - 5):
        problems = check_wheel.check_extension("zarrcore/kernels.so", data[:cut])
        assert len(problems) == 1 and problems[0].startswith("zarrcore/kernels.so: "), cut


# The libraries' versions as the extensions carry them (appended to each image below, past
# what the format's headers reach), and the dist-info that names them: the SBOM and licences.
VERSIONS = {"c-blosc": "1.21.7", "zstd": "1.5.6", "lz4": "1.10.0", "zlib": "1.3.1"}
COMPILED_IN = b"\x001.21.7\x00\x001.5.6\x00\x001.10.0\x00 deflate 1.3.1 Copyright\x00"


def public_files(z, check_wheel):
    for name in ("kernels.pxd", "array_api.pxd", "array_api.h", "py.typed"):
        z.writestr(f"zarrcore/{name}", b"")
    sbom = check_wheel.sbom
    libraries = [(library, VERSIONS[library.name]) for library in sbom.LIBRARIES]
    z.writestr(f"zarrcore-0.1.0.dist-info/sboms/{sbom.SBOM_NAME}",
               json.dumps(sbom.document(libraries, "0.1.0", "libblosc.a", "0" * 64)))
    for library in sbom.LIBRARIES:
        z.writestr(f"zarrcore-0.1.0.dist-info/licenses/{sbom.LICENSE_DIR}/"
                   f"{library.licence_file}", b"")


def test_a_macos_wheel_of_good_extensions_passes_and_a_bad_one_fails(check_wheel, tmp_path):
    wheel = tmp_path / "zarrcore-0.1.0-cp311-cp311-macosx_11_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        public_files(z, check_wheel)
        for m in check_wheel.EXTENSIONS:
            z.writestr(f"zarrcore/{m}.cpython-311-darwin.so",
                       good_macho(m.rsplit("/", 1)[-1]) + COMPILED_IN)
    assert check_wheel.check_wheel(wheel) == []
    with zipfile.ZipFile(wheel, "a") as z:
        z.writestr("zarrcore/kernels.cpython-312-darwin.so",
                   macho([LIBSYSTEM, "/opt/homebrew/lib/libblosc.1.dylib"],
                         [("PyInit_kernels", EXPORTED)]))
    assert check_wheel.check_wheel(wheel) == [
        "zarrcore/kernels.cpython-312-darwin.so: needs /opt/homebrew/lib/libblosc.1.dylib"]


DLL_SOURCE = r"""
#include <windows.h>
__declspec(dllexport) void *PyInit_%(module)s(void) { return (void *)GetModuleHandleW(NULL); }
#ifdef EXTRA_EXPORT
__declspec(dllexport) int ZSTD_compress(void) { return 0; }
#endif
#ifdef EXTRA_DLL
__declspec(dllexport) int beep(void) { return MessageBeep(0); }
#endif
BOOL WINAPI DllMainCRTStartup(HINSTANCE h, DWORD reason, LPVOID reserved)
{
    (void)h, (void)reason, (void)reserved;
    return TRUE;
}
"""


def mingw_dll(tmp_path, module, *defines, libraries=("kernel32",)):
    """A DLL like an extension module: PyInit_<module> exported, KERNEL32 imported, no C
    runtime (MinGW's would be msvcrt.dll, which MSVC builds never link)."""
    if shutil.which(MINGW) is None:
        pytest.skip(f"no {MINGW} to build Windows DLLs with (apt-get install gcc-mingw-w64-x86-64)")
    source = tmp_path / f"{module}.c"
    source.write_text(DLL_SOURCE % {"module": module})
    out = tmp_path / f"{module}{''.join(d.lower() for d in defines)}.pyd"
    subprocess.run([MINGW, "-shared", "-nostdlib", "-O2", *(f"-D{d}" for d in defines),
                    str(source), "-o", str(out), *(f"-l{lib}" for lib in libraries)], check=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def kernels_dll(tmp_path_factory):
    return mingw_dll(tmp_path_factory.mktemp("dll"), "kernels")


@pytest.mark.slow  # builds DLLs with MinGW-w64
def test_a_pe_extension_importing_kernel32_and_exporting_its_init_passes(check_wheel, kernels_dll):
    data = kernels_dll
    assert check_wheel.pe_dynamic_info(data) == (["KERNEL32.dll"], ["PyInit_kernels"])
    assert check_wheel.check_extension("zarrcore/kernels.cp311-win_amd64.pyd", data) == []


@pytest.mark.slow  # builds DLLs with MinGW-w64
def test_a_pe_extension_linking_another_dll_or_exporting_more_fails(check_wheel, tmp_path):
    extra_dll = mingw_dll(tmp_path, "kernels", "EXTRA_DLL", libraries=("kernel32", "user32"))
    assert check_wheel.check_extension("zarrcore/kernels.pyd", extra_dll) == [
        "zarrcore/kernels.pyd: needs USER32.dll", "zarrcore/kernels.pyd: exports beep"]
    extra_export = mingw_dll(tmp_path, "kernels", "EXTRA_EXPORT")
    assert check_wheel.check_extension("zarrcore/kernels.pyd", extra_export) == [
        "zarrcore/kernels.pyd: exports ZSTD_compress"]


def test_pe_imports_allowed_are_the_msvc_runtime_kernel32_and_python(check_wheel):
    allowed = ["KERNEL32.dll", "VCRUNTIME140.dll", "api-ms-win-crt-runtime-l1-1-0.dll",
               "API-MS-WIN-CRT-HEAP-L1-1-0.DLL", "python311.dll", "python3.dll"]
    refused = ["msvcrt.dll", "blosc.dll", "VCRUNTIME140_1.dll", "MSVCP140.dll", "USER32.dll",
               "python311.dll.evil"]
    assert all(check_wheel.PE_ALLOWED.fullmatch(n) for n in allowed)
    assert not any(check_wheel.PE_ALLOWED.fullmatch(n) for n in refused)


@pytest.mark.slow  # builds DLLs with MinGW-w64
def test_a_windows_wheel_s_pyd_extensions_are_found_and_checked(check_wheel, kernels_dll, tmp_path):
    """Only `kernels` is built (a DLL per module costs seconds): the others are reported
    missing, `kernels` is not, and its own check passes."""
    wheel = tmp_path / "zarrcore-0.1.0-cp311-cp311-win_amd64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        public_files(z, check_wheel)
        z.writestr("zarrcore/kernels.cp311-win_amd64.pyd", kernels_dll + COMPILED_IN)
    assert check_wheel.check_wheel(wheel) == [
        f"zarrcore/{m}: no compiled extension" for m in check_wheel.EXTENSIONS if m != "kernels"]


@pytest.mark.slow  # builds DLLs with MinGW-w64
def test_a_truncated_pe_extension_is_reported_not_crashed_on(check_wheel, kernels_dll):
    data = kernels_dll
    for cut in (2, 0x40, 0x100, len(data) // 2):
        problems = check_wheel.check_extension("zarrcore/kernels.pyd", data[:cut])
        assert len(problems) == 1 and problems[0].startswith("zarrcore/kernels.pyd: "), cut
