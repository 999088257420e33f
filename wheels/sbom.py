"""The software bill of materials of zarrcore's wheels (PEP 770): a CycloneDX JSON document
naming each library the extensions link statically, with its version and licence, read from
the build's own inputs. Every extension links python-blosc's static library: c-blosc, and
the zstd, lz4 and zlib it bundles. c-blosc's version is the BLOSC_VERSION_STRING of the
blosc.h the build compiles against (found in the archive too); each bundled library's is the
version string compiled into its member of the archive linked (zstd's and lz4's version
strings, zlib's copyright line). setup.py writes the document into every wheel as
`<dist-info>/sboms/zarrcore.cdx.json`; wheels/check_wheel.py reads it back against the
extensions.

    python wheels/sbom.py BLOSC_H LIBBLOSC [ZARRCORE_VERSION]   # prints the document
"""
import dataclasses
import hashlib
import json
import pathlib
import re
import sys

SBOM_NAME = "zarrcore.cdx.json"
# Where each library's licence text lies in the wheel: PEP 639's licence files under
# `<dist-info>/licenses/`, shipped from the checkout's licenses/ (pyproject.toml).
LICENSE_DIR = "licenses"

# A version as compiled in: digits and dots, not part of a longer word or number nor after a
# space (as in the compiler's "GCC: (GNU) 12.2.0" of an object's comment), ending the string
# (C strings end with a NUL). `{v}` stands for the version: any, when it is read from a
# build's archive; the SBOM's, when a wheel's extensions are searched for it.
_VERSION_STRING = rb"(?<![\w. ])({v})\x00"
ANY_VERSION = rb"\d+\.\d+\.\d+[\w.]*"


@dataclasses.dataclass(frozen=True)
class Library:
    name: str
    member: str  # the archive member (its name up to the first dot) holding the version
    pattern: bytes  # the version compiled in, `{v}` standing for it
    licence: str  # SPDX expression
    licence_file: str  # under LICENSE_DIR
    purl: str  # package URL, without the version
    description: str


# c-blosc's BloscLZ derives from FastLZ, its bit shuffle from Bitshuffle: both MIT, their
# notices in its licence file.
BLOSC = Library("c-blosc", "blosc", _VERSION_STRING, "BSD-3-Clause AND MIT", "c-blosc.txt",
                "pkg:github/Blosc/c-blosc", "Blosc meta-compressor (with BloscLZ)")
LIBRARIES = (
    BLOSC,
    Library("zstd", "zstd_common", _VERSION_STRING, "BSD-3-Clause OR GPL-2.0-only", "zstd.txt",
            "pkg:github/facebook/zstd", "Zstandard compression (bundled in c-blosc)"),
    Library("lz4", "lz4", _VERSION_STRING, "BSD-2-Clause", "lz4.txt", "pkg:github/lz4/lz4",
            "LZ4 compression library (bundled in c-blosc)"),
    Library("zlib", "deflate", rb" deflate ({v}) Copyright", "Zlib", "zlib.txt",
            "pkg:github/madler/zlib", "zlib compression library (bundled in c-blosc)"),
)


def versions_in(library, data, version=None):
    """The versions of `library` compiled into `data` (bytes): any, or only `version`."""
    wanted = re.escape(version.encode()) if version is not None else ANY_VERSION
    return {v.decode() for v in re.findall(library.pattern.replace(b"{v}", wanted), data)}


class SbomError(ValueError):
    """The build's inputs do not say what they hold, or a wheel's SBOM is malformed."""


def archive_members(data):
    """{member name: bytes} of a static library: a System V / GNU `ar` archive (Linux, and
    Windows' .lib, whose long names are in the same `//` table) or a BSD one (macOS: `#1/N`
    names stored before the body)."""
    if data[:8] != b"!<arch>\n":
        raise SbomError("not an ar archive")
    members, long_names, at = {}, b"", 8
    while at + 60 <= len(data):
        header = data[at:at + 60]
        name = header[:16].decode("latin-1").rstrip()
        size = int(header[48:58].decode("ascii").strip() or 0)
        body = data[at + 60:at + 60 + size]
        at += 60 + size + (size & 1)
        if name == "//":
            long_names = body
            continue
        if name.startswith("#1/"):
            length = int(name[3:])
            name, body = body[:length].rstrip(b"\0").decode("latin-1"), body[length:]
        elif name.startswith("/") and name[1:].isdigit():
            start = int(name[1:])
            end = min(i for i in (long_names.find(b"\n", start), long_names.find(b"\0", start),
                                  len(long_names)) if i >= 0)
            name = long_names[start:end].decode("latin-1")
        name = name.rstrip("/")
        if name not in ("", "SYM64", "__.SYMDEF", "__.SYMDEF SORTED"):  # symbol tables
            members[name] = body
    return members


def member_stem(name):
    """`zstd_common` of `zstd_common.c.o`, `...\\zstd_common.obj` or `zstd_common.o`."""
    return re.split(r"[/\\]", name)[-1].split(".")[0]


def header_version(text):
    found = re.search(r'^\s*#\s*define\s+BLOSC_VERSION_STRING\s+"([^"]+)"', text, re.MULTILINE)
    if found is None:
        raise SbomError("blosc.h defines no BLOSC_VERSION_STRING")
    return found.group(1)


def linked_libraries(header_text, archive):
    """[(Library, version)] of what the archive (bytes) holds, c-blosc's version from the
    header it was compiled with; an SbomError when a library or its version is not found
    once."""
    by_stem = {}
    for name, body in archive_members(archive).items():
        by_stem.setdefault(member_stem(name), []).append(body)
    found = []
    for library in LIBRARIES:
        bodies = by_stem.get(library.member)
        if not bodies:
            raise SbomError(f"{library.name}: no member {library.member}.* in the archive")
        # c-blosc's own version string is one of several in its member (it also names its
        # compressors' versions): blosc.h's, which the archive must hold.
        expected = header_version(header_text) if library is BLOSC else None
        versions = set().union(*(versions_in(library, b, expected) for b in bodies))
        if len(versions) != 1:
            raise SbomError(f"{library.name}: {len(versions)} version strings in "
                            f"{library.member}" + (f" (blosc.h says {expected})" if expected
                                                    else f": {sorted(versions)}"))
        version = versions.pop()
        found.append((library, version))
    return found


def document(libraries, zarrcore_version, archive_name, archive_sha256):
    """The CycloneDX 1.6 document of zarrcore and the libraries linked into it. No serial
    number or timestamp: a build from the same inputs writes the same bytes."""
    ref = f"pkg:pypi/zarrcore@{zarrcore_version}"
    components = [{
        "type": "library",
        "bom-ref": f"{library.purl}@{version}",
        "name": library.name,
        "version": version,
        "description": library.description,
        "licenses": [{"expression": library.licence}],
        "purl": f"{library.purl}@{version}",
        "properties": [
            {"name": "zarrcore:linkage", "value": "static"},
            {"name": "zarrcore:licence-file", "value": f"{LICENSE_DIR}/{library.licence_file}"},
            {"name": "zarrcore:archive", "value": archive_name},
            {"name": "zarrcore:archive-sha256", "value": archive_sha256},
        ],
    } for library, version in libraries]
    blosc_ref = [c["bom-ref"] for c in components if c["name"] == BLOSC.name]
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "version": 1,
        "metadata": {
            "component": {"type": "library", "bom-ref": ref, "name": "zarrcore",
                          "version": zarrcore_version, "purl": ref},
            "properties": [{"name": "zarrcore:generated-by", "value": "wheels/sbom.py"}],
        },
        "components": components,
        "dependencies": [
            {"ref": ref, "dependsOn": blosc_ref},
            {"ref": blosc_ref[0],
             "dependsOn": [c["bom-ref"] for c in components if c["name"] != BLOSC.name]},
        ] + [{"ref": c["bom-ref"], "dependsOn": []} for c in components
             if c["name"] != BLOSC.name],
    }


def build_sbom(header_path, archive_path, zarrcore_version):
    """The document (text) for a build compiling against `header_path` and linking
    `archive_path`."""
    header = pathlib.Path(header_path).read_text(errors="replace")
    archive = pathlib.Path(archive_path).read_bytes()
    libraries = linked_libraries(header, archive)
    return json.dumps(document(libraries, zarrcore_version, pathlib.Path(archive_path).name,
                               hashlib.sha256(archive).hexdigest()), indent=2) + "\n"


def read_components(text):
    """{name: (version, licence expression, licence file)} of an SBOM this module wrote; an
    SbomError when it is not one."""
    try:
        sbom = json.loads(text)
        if sbom["bomFormat"] != "CycloneDX":
            raise SbomError("not a CycloneDX document")
        components = {}
        for c in sbom["components"]:
            properties = {p["name"]: p["value"] for p in c.get("properties", ())}
            (licence,) = c["licenses"]
            components[c["name"]] = (c["version"], licence["expression"],
                                     properties["zarrcore:licence-file"])
        return components
    except (ValueError, KeyError, TypeError) as e:
        raise SbomError(f"not a readable SBOM: {e!r}") from None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(build_sbom(argv[0], argv[1], argv[2] if len(argv) == 3 else "0"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
