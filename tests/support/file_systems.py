"""Directories on the file systems a test needs beside its own `tmp_path`.

`make test` keeps the suite's temporary files on tmpfs (/dev/shm), where creating and renaming
a file costs the system a tenth of what it does on a disk. The tests of a disk's page cache, or
of what happens between two file systems, take their directories from here (conftest's
`disk_path` and `shm_path`)."""
import os
import tempfile

SHM = "/dev/shm"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def on_tmpfs(path):
    """Is `path` on /dev/shm's file system?"""
    return os.path.isdir(SHM) and os.stat(SHM).st_dev == os.stat(path).st_dev


def new_disk_dir():
    """A new directory off tmpfs (below the checkout's build/, else /var/tmp), or None where
    every place to make one is on tmpfs or cannot be written."""
    for parent in (os.path.join(ROOT, "build", "test-disk"), "/var/tmp"):
        try:
            os.makedirs(parent, exist_ok=True)
            path = tempfile.mkdtemp(prefix="zarrcore-", dir=parent)
        except OSError:
            continue
        if not on_tmpfs(path):
            return path
        os.rmdir(path)
    return None
