"""Test a release wheel inside a Debian chroot (`make release-test-aarch64`): another
architecture run by qemu-user (binfmt_misc), or an older Debian release, with Debian's own
Python. The chroot is made once by debootstrap (from Debian's default archive) and kept; the
wheel, the tests and wheels/ are copied in, and wheels/test_wheels.py runs there on the
subset (or --full, the whole suite), appending its record to DIST/TESTS.txt.

    python wheels/chroot.py --dir CHROOT --arch arm64 --suite bookworm --dist DIST \\
        --platform-tag manylinux_2_17_aarch64 [--full]
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = "python3,python3-venv,python3-pip,ca-certificates"


def run(*args):
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], check=True)


def make_chroot(root, arch, suite):
    if (root / ".ready").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    run("debootstrap", f"--arch={arch}", "--variant=minbase", f"--include={PACKAGES}", suite,
        root)
    (root / ".ready").touch()


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
    (test / "src" / "zarrcore").mkdir()
    for pyx in (ROOT / "zarrcore").glob("*.pyx"):  # check_wheel.py's list of extensions
        shutil.copy(pyx, test / "src" / "zarrcore")
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
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    make_chroot(root, args.arch, args.suite)
    test = stage(root, args.dist.resolve(), args.platform_tag)
    tag = subprocess.run(["chroot", root, "/usr/bin/python3", "-c", "import sys; "
                          "print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"],
                         capture_output=True, text=True, check=True).stdout.strip()
    where = f"Debian {args.suite} {args.arch} chroot" + (
        " under qemu-user" if args.arch not in ("amd64",) else "")
    # /proc: the tests read it (memory counters, open descriptors), as the interpreter does.
    run("mount", "-t", "proc", "proc", root / "proc")
    try:
        code = subprocess.run(
            ["chroot", root, "/usr/bin/python3", "/zarrcore-test/src/wheels/test_wheels.py",
             "--dist", "/zarrcore-test/dist", "--platform-tag", args.platform_tag,
             "--where", where, *(["--full", tag] if args.full else []), "/usr/bin/python3"]
        ).returncode
    finally:
        run("umount", root / "proc")
    record = test / "dist" / "TESTS.txt"
    if record.exists():
        with open(args.dist / "TESTS.txt", "a") as f:
            f.write(record.read_text())
    return code


if __name__ == "__main__":
    sys.exit(main())
