"""Check the Windows port of csrc/ from Linux (`make wincheck`).

    python wheels/wincheck.py [--run]

Cross-compiles every C file of csrc/ for Windows with MinGW-w64 (WIN_CC, default
x86_64-w64-mingw32-gcc), warnings as errors, against the blosc.h of the installed `blosc`
distribution, as the build uses it. With --run, also builds tests/support/win/os_check.c with the
core's system layer (also through its MSVC branches) and runs it under Wine (WINE, default wine): files, renames over open files,
locks, temporary files, memory and threads as Windows does them (Wine: WINE, else wine or
wine64 on the path, else Debian's /usr/lib/wine/wine64).
Exits 1 and prints the compiler's or the check's complaints on failure.
"""
import concurrent.futures
import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"]
# What tests/support/win/os_check.c needs: the system layer and what sits right on it.
OS_CHECK_SOURCES = ["files/zc_fs.c", "files/zc_key_lock.c", "files/zc_memstore.c",
                    "files/zc_sha256.c", "files/zc_temp.c", "os/zc_fork.c"]


def blosc_include():
    """The directory of blosc.h in the installed `blosc` distribution."""
    for f in importlib.metadata.distribution("blosc").files or ():
        if str(f).replace("\\", "/").endswith("include/blosc.h"):
            return pathlib.Path(f.locate()).resolve().parent
    raise SystemExit("wincheck: the installed 'blosc' distribution ships no blosc.h")


def compile_all(cc, out):
    """Compile every C file of csrc/ into `out`: the failures' messages."""
    include = ["-I", str(ROOT / "csrc"), "-I", str(ROOT), "-I", str(blosc_include())]

    def compile_one(source):
        r = subprocess.run([cc, *FLAGS, *include, "-c", str(source),
                            "-o", str(out / (source.stem + ".o"))], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            return f"{source.relative_to(ROOT)}:\n{r.stderr.strip()}"
        return None

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = pool.map(compile_one, sorted((ROOT / "csrc").rglob("*.c")))
    return [r for r in results if r is not None]


def find_wine():
    """The Wine to run Windows programs with: WINE, or wine / wine64 on the path, or Debian's
    wine64 package's own; None when there is none."""
    if "WINE" in os.environ:
        return shutil.which(os.environ["WINE"])
    for name in ("wine", "wine64", "/usr/lib/wine/wine64"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _run_under_wine(wine, exe, work, env):
    """The completed run of `exe` under Wine. A run that printed nothing never reached the
    program's own verdict (on a loaded machine Wine once exited 1 without a word, the cause
    not found): that one is run again, once, after the prefix's server has ended."""
    run = [wine, str(exe), str(work)]
    r = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0 and not (r.stdout + r.stderr).strip():
        server = pathlib.Path(wine).with_name("wineserver")
        if server.exists():
            subprocess.run([str(server), "-w"], env=env, capture_output=True, timeout=300)
        r = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    return r


def run_os_check(cc, wine, out):
    """Build tests/support/win/os_check.c with the core's system layer, once as GCC-like compilers see
    it and once through its MSVC branches (ZC_MSVC: intrinsics that MinGW's headers have too),
    and run both under Wine: their complaints, or none."""
    sources = sorted((ROOT / "csrc" / "os").glob("zc_os_*.c")) + [ROOT / "csrc" / s for s in OS_CHECK_SOURCES]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        # One Wine prefix for both runs: making one takes most of the time.
        env = dict(os.environ, WINEDEBUG="-all", WINEPREFIX=str(pathlib.Path(work) / "prefix"))
        for variant, defines in (("gcc", []), ("msvc", ["-DZC_MSVC=1"])):
            exe = out / f"os_check_{variant}.exe"
            r = subprocess.run([cc, *FLAGS, *defines, "-I", str(ROOT / "csrc"),
                                str(ROOT / "tests/support/win/os_check.c"), *map(str, sources),
                                "-o", str(exe)], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"building {exe.name}:\n{r.stderr.strip()}")
                continue
            r = _run_under_wine(wine, exe, pathlib.Path(work) / variant, env)
            if r.returncode != 0 or r.stdout.strip().splitlines()[-1:] != ["OK"]:
                failures.append(f"{exe.name} under {wine} (exit {r.returncode}):\n"
                                f"{r.stdout}{r.stderr}")
        # Stop this prefix's server now rather than seconds after its last program.
        server = pathlib.Path(wine).with_name("wineserver")
        if server.exists():
            subprocess.run([str(server), "-k"], env=env, capture_output=True)
    return failures


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cc = os.environ.get("WIN_CC", "x86_64-w64-mingw32-gcc")
    if shutil.which(cc) is None:
        print(f"wincheck: no {cc} (apt-get install gcc-mingw-w64-x86-64)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as out:
        failures = compile_all(cc, pathlib.Path(out))
        if not failures and "--run" in argv:
            wine = find_wine()
            if wine is None:
                print("wincheck: no Wine to run the check with (apt-get install wine64)",
                      file=sys.stderr)
                return 2
            failures = run_os_check(cc, wine, pathlib.Path(out))
    for failure in failures:
        print(failure)
    print("wincheck: " + ("OK" if not failures else f"{len(failures)} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
