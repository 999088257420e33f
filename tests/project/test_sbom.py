"""The wheels' SBOM (PEP 770, wheels/sbom.py): generated from the build's inputs (the blosc.h
compiled against, the static library linked, in each platform's archive format), and checked
by wheels/check_wheel.py against the versions compiled into the extensions and the licence
files shipped."""
import importlib.metadata
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if not (ROOT / "wheels" / "sbom.py").is_file():
    pytest.skip("needs the source checkout (wheels/sbom.py) beside the tests",
                allow_module_level=True)
spec = importlib.util.spec_from_file_location("sbom", ROOT / "wheels" / "sbom.py")
sbom = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sbom)

HEADER = '#define BLOSC_VERSION_MAJOR 1\n#define BLOSC_VERSION_STRING   "1.21.7.dev"  /* x */\n'
# What each library's member holds: its version among other strings and code.
MEMBERS = {
    "blosc.c.o": b"\x00zlib\x00zstd\x001.21.7.dev\x00BloscLZ\x002.5.1\x00Zlib\x001.3.1\x00",
    "zstd_common.c.o": b"\x90\xe9\x00\x00\x00\x001.5.6\x00\x00GCC: (GNU) 14.2.1\x00",
    "lz4.c.o": b"H\x8b\x87\x00@\x00\x00\xc31.10.0\x00\x00\x00",
    "deflate.c.o": b"\x00 deflate 1.3.1 Copyright 1995-2024 Jean-loup Gailly \x00",
    "inflate.c.o": b"\x00 inflate 1.3.1 Copyright 1995-2024 Mark Adler \x00",
}
EXPECTED = {"c-blosc": "1.21.7.dev", "zstd": "1.5.6", "lz4": "1.10.0", "zlib": "1.3.1"}


def header(name, size):
    return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()


def gnu_archive(members):
    """A GNU ar archive (Linux, and the layout of Windows' .lib): names past 15 characters in
    the `//` table."""
    table, entries = b"", []
    for name, body in members.items():
        if len(name) > 15:
            entries.append((f"/{len(table)}", body))
            table += name.encode() + b"/\n"
        else:
            entries.append((name + "/", body))
    out = b"!<arch>\n" + header("/", 4) + b"\0\0\0\0"
    out += header("//", len(table)) + table + b"\n" * (len(table) & 1)
    for name, body in entries:
        out += header(name, len(body)) + body + b"\n" * (len(body) & 1)
    return out


def bsd_archive(members):
    """A BSD ar archive (macOS): each name stored before its body, `#1/<length>`."""
    out = b"!<arch>\n"
    for name, body in {"__.SYMDEF SORTED": b"\0" * 8, **members}.items():
        raw = name.encode() + b"\0" * (-len(name) % 8)
        out += header(f"#1/{len(raw)}", len(raw) + len(body)) + raw + body
        out += b"\n" * ((len(raw) + len(body)) & 1)
    return out


@pytest.mark.parametrize("make", [gnu_archive, bsd_archive])
def test_each_archive_format_s_members_are_read(make):
    assert sbom.archive_members(make(MEMBERS)) == MEMBERS


@pytest.mark.parametrize("make", [gnu_archive, bsd_archive])
def test_the_versions_come_from_the_header_and_the_archive_members(make):
    found = sbom.linked_libraries(HEADER, make(MEMBERS))
    assert {library.name: version for library, version in found} == EXPECTED


def test_windows_member_paths_are_matched_by_their_file_name():
    members = {f"blosc\\CMakeFiles\\blosc_static.dir\\{name.replace('.c.o', '.c.obj')}": body
               for name, body in MEMBERS.items()}
    found = sbom.linked_libraries(HEADER, gnu_archive(members))
    assert {library.name: version for library, version in found} == EXPECTED


def test_a_library_missing_from_the_archive_is_an_error():
    members = {k: v for k, v in MEMBERS.items() if k != "lz4.c.o"}
    with pytest.raises(sbom.SbomError, match=r"lz4: no member lz4\.\*"):
        sbom.linked_libraries(HEADER, gnu_archive(members))


def test_a_header_the_archive_disagrees_with_is_an_error():
    with pytest.raises(sbom.SbomError, match=r"c-blosc: 0 version strings .*blosc.h says 1\.21\.8"):
        sbom.linked_libraries(HEADER.replace("1.21.7.dev", "1.21.8"), gnu_archive(MEMBERS))
    with pytest.raises(sbom.SbomError, match="no BLOSC_VERSION_STRING"):
        sbom.linked_libraries("", gnu_archive(MEMBERS))


def test_two_versions_of_a_library_are_an_error():
    members = dict(MEMBERS, **{"zstd_common.c.o": b"\x001.5.6\x00\x001.5.7\x00"})
    with pytest.raises(sbom.SbomError, match=r"zstd: 2 version strings .*1\.5\.6.*1\.5\.7"):
        sbom.linked_libraries(HEADER, gnu_archive(members))


def test_the_document_is_cyclonedx_names_each_library_and_is_reproducible(tmp_path):
    (tmp_path / "blosc.h").write_text(HEADER)
    (tmp_path / "libblosc.a").write_bytes(gnu_archive(MEMBERS))
    text = sbom.build_sbom(tmp_path / "blosc.h", tmp_path / "libblosc.a", "0.1.0")
    assert text == sbom.build_sbom(tmp_path / "blosc.h", tmp_path / "libblosc.a", "0.1.0")
    doc = json.loads(text)
    assert (doc["bomFormat"], doc["specVersion"]) == ("CycloneDX", "1.6")
    assert doc["metadata"]["component"]["purl"] == "pkg:pypi/zarrcore@0.1.0"
    assert {c["name"]: c["version"] for c in doc["components"]} == EXPECTED
    assert {c["name"]: c["licenses"] for c in doc["components"]} == {
        "c-blosc": [{"expression": "BSD-3-Clause AND MIT"}],
        "zstd": [{"expression": "BSD-3-Clause OR GPL-2.0-only"}],
        "lz4": [{"expression": "BSD-2-Clause"}], "zlib": [{"expression": "Zlib"}]}
    for c in doc["components"]:
        assert c["purl"] == c["bom-ref"] and c["purl"].endswith("@" + c["version"])
        assert {"name": "zarrcore:linkage", "value": "static"} in c["properties"]
    (zarrcore_deps,) = [d for d in doc["dependencies"] if d["ref"] == "pkg:pypi/zarrcore@0.1.0"]
    assert zarrcore_deps["dependsOn"] == ["pkg:github/Blosc/c-blosc@1.21.7.dev"]
    assert sbom.read_components(text)["zstd"] == ("1.5.6", "BSD-3-Clause OR GPL-2.0-only",
                                                  "licenses/zstd.txt")


def test_every_licence_file_the_sbom_names_is_in_the_checkout_and_the_license_files():
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license-files"]
    for library in sbom.LIBRARIES:
        path = f"{sbom.LICENSE_DIR}/{library.licence_file}"
        assert (ROOT / path).is_file() and any(ROOT.glob(p) for p in listed
                                               if pathlib.PurePath(path).match(p)), path


def blosc_inputs():
    """blosc.h and the static library of the installed python-blosc: what setup.py builds
    with."""
    try:
        files = importlib.metadata.distribution("blosc").files or ()
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("python-blosc (a build requirement) is not installed")
    found = {}
    for f in files:
        name = str(f).replace("\\", "/")
        if name.endswith("include/blosc.h"):
            found["header"] = f.locate()
        elif name.endswith(("/libblosc.a", "/libblosc.lib")):
            found["archive"] = f.locate()
    if len(found) != 2:
        pytest.skip("the installed python-blosc ships no blosc.h and static library")
    return found["header"], found["archive"]


def test_the_installed_python_blosc_s_inputs_name_all_four_libraries():
    header, archive = blosc_inputs()
    found = sbom.linked_libraries(pathlib.Path(header).read_text(),
                                  pathlib.Path(archive).read_bytes())
    assert [library.name for library, _ in found] == ["c-blosc", "zstd", "lz4", "zlib"]
    assert all(version[0].isdigit() for _, version in found)


def test_the_installed_package_s_sbom_names_the_versions_its_libraries_report():
    from zarrcore._native.compress import library_versions

    text = importlib.metadata.distribution("zarrcore").read_text(f"sboms/{sbom.SBOM_NAME}")
    if text is None:
        pytest.skip("the installed zarrcore has no SBOM (an in-place build)")
    named = {name: version for name, (version, _, _) in sbom.read_components(text).items()}
    assert library_versions() == named


# check_wheel.check_sbom on packages given as {path: bytes loader}.
DISTINFO = "zarrcore-0.1.0.dist-info"


def package(check_wheel, sbom_text, extension=b"".join(MEMBERS.values()), licences=True):
    files = {f"zarrcore/{m}.so": (lambda: extension) for m in check_wheel.EXTENSIONS}
    if sbom_text is not None:
        files[f"{DISTINFO}/sboms/zarrcore.cdx.json"] = lambda: sbom_text.encode()
    if licences:
        for library in sbom.LIBRARIES:
            files[f"{DISTINFO}/licenses/licenses/{library.licence_file}"] = lambda: b"text"
    return files


@pytest.fixture
def good_sbom(tmp_path):
    (tmp_path / "blosc.h").write_text(HEADER)
    (tmp_path / "libblosc.a").write_bytes(gnu_archive(MEMBERS))
    return sbom.build_sbom(tmp_path / "blosc.h", tmp_path / "libblosc.a", "0.1.0")


def run_check(check_wheel, files):
    return check_wheel.check_sbom(files, sorted(n for n in files if n.endswith(".so")))


def test_check_wheel_passes_an_sbom_matching_the_extensions(check_wheel, good_sbom):
    assert run_check(check_wheel, package(check_wheel, good_sbom)) == []


def test_check_wheel_refuses_a_wheel_without_an_sbom(check_wheel):
    assert run_check(check_wheel, package(check_wheel, None)) == [
        "<dist-info>/sboms/zarrcore.cdx.json: 0 found, 1 expected"]


def test_check_wheel_refuses_versions_not_compiled_in(check_wheel, good_sbom):
    other = b"".join(MEMBERS.values()).replace(b"1.10.0", b"1.9.4").replace(
        b"deflate 1.3.1", b"deflate 1.2.13")
    assert run_check(check_wheel, package(check_wheel, good_sbom, extension=other)) == [
        f"{DISTINFO}/sboms/zarrcore.cdx.json: lz4 1.10.0 is not what the extensions link "
        f"(no such version compiled in)",
        f"{DISTINFO}/sboms/zarrcore.cdx.json: zlib 1.3.1 is not what the extensions link "
        f"(no such version compiled in)"]


def test_check_wheel_refuses_an_sbom_missing_a_library_or_naming_another(check_wheel, good_sbom):
    doc = json.loads(good_sbom)
    doc["components"] = [c for c in doc["components"] if c["name"] != "zstd"]
    doc["components"].append(dict(doc["components"][0], name="snappy"))
    assert run_check(check_wheel, package(check_wheel, json.dumps(doc))) == [
        f"{DISTINFO}/sboms/zarrcore.cdx.json: names snappy, which is not among the libraries "
        f"linked",
        f"{DISTINFO}/sboms/zarrcore.cdx.json: does not name zstd, which the extensions link"]


def test_check_wheel_refuses_missing_licence_files_and_unreadable_sboms(check_wheel, good_sbom):
    problems = run_check(check_wheel, package(check_wheel, good_sbom, licences=False))
    assert problems == [
        f"{DISTINFO}/sboms/zarrcore.cdx.json: {library.name}'s licence file "
        f"licenses/{library.licence_file} is not in {DISTINFO}/licenses"
        for library in sbom.LIBRARIES]
    (problem,) = run_check(check_wheel, package(check_wheel, '{"bomFormat": "SPDX"}'))
    assert problem.startswith(f"{DISTINFO}/sboms/zarrcore.cdx.json: not a readable SBOM")
