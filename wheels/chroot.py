"""Test a release wheel inside a Debian chroot: another architecture run by qemu-user
(binfmt_misc; `make release-test-aarch64`), or an older Debian release (`make
release-test-bullseye`). The chroot is made once by debootstrap (from the Debian archive of this
machine's apt sources) and kept. Its Python is Debian's own, or with --python VERSION:SUITE a
CPython built inside the chroot, once, by the chroot's own compiler against its own C library,
from Debian's python3.X source package of SUITE (.ci/debian-python-source): bullseye's Python
(3.9) is older than zarrcore needs. The wheel, the tests and wheels/ are copied in, and
wheels/test_wheels.py runs there on the subset (or --full, the whole suite), appending its
record to DIST/TESTS.txt.

    python wheels/chroot.py --dir CHROOT --arch arm64 --suite bookworm --dist DIST \\
        --platform-tag manylinux_2_17_aarch64 [--python 3.11:bookworm] [--full]
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

import test_wheels

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = "python3,python3-venv,python3-pip,ca-certificates"
# What building CPython in the chroot needs (--python): its compiler and the libraries of the
# modules pip and the tests use (ssl, zlib, ctypes, bz2, lzma, sqlite3, uuid).
BUILD_PACKAGES = ("build-essential,libssl-dev,zlib1g-dev,libffi-dev,libbz2-dev,liblzma-dev,"
                  "libsqlite3-dev,uuid-dev,libexpat1-dev")
# Building it with musl (--musl): Debian's musl-gcc; wheels/musl-python.sh builds the rest.
MUSL_PACKAGES = "build-essential,musl-tools"
# The chroot's own tools, not those the host's PATH names first (pyenv's shims, ...).
CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(*args, **kwargs):
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], check=True, **kwargs)


def make_chroot(root, arch, suite, packages=PACKAGES):
    """The chroot, made once by debootstrap from the Debian archive this machine's apt uses
    (.ci/apt-mirror): a `.ready` stamp marks it finished."""
    if (root / ".ready").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    mirror = subprocess.run([ROOT / ".ci" / "apt-mirror"], capture_output=True, text=True,
                            check=True).stdout.strip()
    run("debootstrap", f"--arch={arch}", "--variant=minbase", f"--include={packages}", suite,
        root, mirror)
    (root / ".ready").touch()


def debian_source(script, suite, package, src):
    """A Debian source package's tree, fetched by .ci/SCRIPT into SRC (inside the chroot)."""
    return subprocess.run([ROOT / ".ci" / script, suite, package, src, src / "apt"],
                          capture_output=True, text=True, check=True).stdout.strip()


def build_python(root, version, suite, musl=False):
    """CPython VERSION built in the chroot from SUITE's python3.X source package into
    /opt/pythonX.Y (-musl: by musl-gcc, wheels/musl-python.sh), once (a stamp marks it
    built); its path in the chroot."""
    prefix = f"/opt/python{version}" + ("-musl" if musl else "")
    python = f"{prefix}/bin/python{version}"
    if (root / prefix[1:] / ".built").exists():
        return python
    src = root / "usr" / "src" / "zarrcore-python"

    def inside(path):
        return "/" + str(pathlib.Path(path).relative_to(root))

    tree = inside(debian_source("debian-python-source", suite, f"python{version}", src))
    if musl:
        # The compression libraries' sources: bookworm's (any recent release's would do).
        libs = [inside(debian_source("debian-source", "bookworm", package, src))
                for package in ("zlib", "bzip2", "xz-utils")]
        shutil.copy(ROOT / "wheels" / "musl-python.sh", src)
        script = f"/usr/src/zarrcore-python/musl-python.sh {prefix} {tree} {' '.join(libs)}"
        modules = "zlib, bz2, lzma, venv"
    else:
        build = f"/usr/src/zarrcore-python/build-{version}"
        # No pip in the prefix: `-m venv` bootstraps it into each virtualenv from the bundled
        # wheel. pyexpat as Debian builds it, against the system's expat and as a core module:
        # a Debian fix makes it include CPython's internal headers, which setup.py's build of
        # it refuses. (The build directory is kept: a build that stopped goes on.)
        script = (f"mkdir -p {build}/Modules && cd {build} && printf '*shared*\\npyexpat "
                  f"pyexpat.c -DPy_BUILD_CORE_MODULE -lexpat\\n' >Modules/Setup.local && "
                  f"{tree}/configure --prefix={prefix} --with-ensurepip=no --with-system-expat "
                  f"-q >configure.log && "
                  f"nice make -j{os.environ.get('CHROOT_JOBS', '2')} -s >make.log 2>&1 && "
                  f"rm -rf {prefix} && make -s altinstall >install.log 2>&1")
        modules = "ssl, zlib, ctypes, bz2, lzma, sqlite3, pyexpat, venv"
    run("chroot", root, "/bin/sh", "-c", f"{script} && {python} -c 'import {modules}'",
        env=dict(os.environ, PATH=CHROOT_PATH))
    (root / prefix[1:] / ".built").touch()
    return python


def stage(root, dist, tag):
    """The wheel, the tests and what they read, copied to /zarrcore-test in the chroot."""
    test = root / "zarrcore-test"
    shutil.rmtree(test, ignore_errors=True)
    (test / "dist").mkdir(parents=True)
    wheels = sorted(dist.glob(f"zarrcore-*{tag}*.whl"))
    for wheel in wheels:
        shutil.copy(wheel, test / "dist")
    shutil.copytree(ROOT / "tests", test / "src" / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "wheels", test / "src" / "wheels",
                    ignore=shutil.ignore_patterns("__pycache__", "*.whl"))
    for pyx in (ROOT / "zarrcore").rglob("*.pyx"):  # check_wheel.py's list of extensions
        copy = test / "src" / pyx.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(pyx, copy)
    shutil.copy(ROOT / "pyproject.toml", test / "src")
    # The network and pip's configuration of this machine, its certificates included (pip's
    # configuration may name this bundle, and a proxy may need the machine's own).
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    shutil.copy("/etc/ssl/certs/ca-certificates.crt",
                root / "etc" / "ssl" / "certs" / "ca-certificates.crt")
    for conf in (pathlib.Path("/etc/pip.conf"), pathlib.Path("/etc/xdg/pip")):
        if conf.is_dir():
            shutil.copytree(conf, root / conf.relative_to("/"), dirs_exist_ok=True)
        elif conf.exists():
            shutil.copy(conf, root / conf.relative_to("/"))
    return test


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=pathlib.Path, required=True)
    parser.add_argument("--arch", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--dist", type=pathlib.Path, required=True)
    parser.add_argument("--platform-tag", required=True)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--python", metavar="VERSION:SUITE",
                        help="build CPython VERSION from SUITE's source package in the chroot")
    parser.add_argument("--musl", action="store_true",
                        help="build that CPython with musl-gcc (musllinux wheels)")
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    make_chroot(root, args.arch, args.suite, ",".join(
        [PACKAGES] + ([MUSL_PACKAGES if args.musl else BUILD_PACKAGES] if args.python else [])))
    if args.musl:
        # The name musl systems give their C library, and musllinux wheels need (Debian's
        # musl has it as libc.so in its own directory, which its loader searches).
        machine = args.platform_tag.split("_", 3)[-1]
        libc = root / "usr" / "lib" / f"{machine}-linux-musl" / f"libc.musl-{machine}.so.1"
        if not libc.is_symlink():
            libc.symlink_to("libc.so")
    # /proc: the tests read it (memory counters, open descriptors), as the interpreter and its
    # build do. /dev/shm: POSIX semaphores (multiprocessing's locks), which CPython's configure
    # finds missing without it.
    run("mount", "-t", "proc", "proc", root / "proc")
    run("mount", "-t", "tmpfs", "shm", root / "dev" / "shm")
    try:
        python = (build_python(root, *args.python.split(":"), musl=args.musl) if args.python
                  else "/usr/bin/python3")
        code = test_in_chroot(root, args, python)
    finally:
        run("umount", root / "dev" / "shm")
        run("umount", root / "proc")
    return code


def wheelhouse(dest, platform_tag, tag):
    """The wheels for PLATFORM_TAG and TAG (cp313) of what the subset needs, downloaded here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    run(sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "-d", dest,
        "--platform", platform_tag, "--implementation", "cp", "--python-version",
        f"{tag[2]}.{tag[3:]}", *test_wheels.SUBSET_REQUIRES, *project["dependencies"])


def test_in_chroot(root, args, python):
    test = stage(root, args.dist.resolve(), args.platform_tag)
    tag = subprocess.run(["chroot", root, python, "-c", "import sys; "
                          "print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"],
                         capture_output=True, text=True, check=True).stdout.strip()
    libc = subprocess.run(["chroot", root, "getconf", "GNU_LIBC_VERSION"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if args.musl:
        libc = "musl " + subprocess.run(
            ["chroot", root, "dpkg-query", "-W", "-f", "${Version}", "musl"],
            capture_output=True, text=True, check=True).stdout.strip()
    where = f"Debian {args.suite} {args.arch} chroot ({libc})" + (
        " under qemu-user" if args.arch not in ("amd64",) else "")
    env = dict(os.environ)
    if args.musl:
        # No ssl in that interpreter: pip installs from a directory of the wheels it needs.
        wheelhouse(test / "wheelhouse", args.platform_tag, tag)
        env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS="/zarrcore-test/wheelhouse")
        where += ", CPython built there by musl-gcc"
    code = subprocess.run(
        ["chroot", root, python, "/zarrcore-test/src/wheels/test_wheels.py",
         "--dist", "/zarrcore-test/dist", "--platform-tag", args.platform_tag,
         "--where", where, *(["--full", tag] if args.full else []), python], env=env
    ).returncode
    record = test / "dist" / "TESTS.txt"
    if record.exists():
        with open(args.dist / "TESTS.txt", "a") as f:
            f.write(record.read_text())
    return code


if __name__ == "__main__":
    sys.exit(main())
