"""Local directory store: one file per key, atomic writes, advisory file locks."""
import contextlib
import os
import tempfile

from .._batch import lock_key, unlock_key
from ..errors import StoreError
from .base import Store, validate_key, validate_prefix

TEMP_PREFIX = ".zarrcore-tmp-"
# The key lock file lives outside the store so peers listing it never see it. A key's lock is
# one byte of it (csrc/zc_key_lock.h), which the native batches' writes take alike.
LOCK_DIR = os.path.join(tempfile.gettempdir(), "zarrcore-locks")


def _store_error(key, error):
    """An OSError met on `key` as a StoreError naming the key."""
    return StoreError(error.errno, f"key {key!r}: {error.strerror or error}")


class LocalStore(Store):
    """A store in a directory of the local file system."""

    def __init__(self, root, read_only=False):
        super().__init__(read_only)
        self.root = os.path.abspath(os.fspath(root))

    def _identity(self):
        return self.root

    def __repr__(self):
        return f"LocalStore({self.root!r})"

    def _path(self, key):
        return os.path.join(self.root, *validate_key(key).split("/"))

    def get(self, key, start=None, stop=None):
        try:
            with open(self._path(key), "rb") as f:
                if start is None and stop is None:
                    return f.read()
                size = os.fstat(f.fileno()).st_size
                lo, hi, _ = slice(start, stop).indices(size)
                f.seek(lo)
                return f.read(max(hi - lo, 0))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as e:  # a symlink loop, no permission...
            raise _store_error(key, e) from e

    def get_ranges(self, key, ranges):
        try:
            with open(self._path(key), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                out = []
                for start, stop in ranges:
                    lo, hi, _ = slice(start, stop).indices(size)
                    f.seek(lo)
                    out.append(f.read(max(hi - lo, 0)))
                return out
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as e:  # a symlink loop, no permission...
            raise _store_error(key, e) from e

    def getsize(self, key):
        try:
            return os.stat(self._path(key)).st_size
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise _store_error(key, e) from e

    def set(self, key, value):
        self.check_writable(key)
        path = self._path(key)
        directory = os.path.dirname(path)
        try:
            os.makedirs(directory, exist_ok=True)
            # Write beside the target and rename, so a reader never sees a torn file.
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
        except OSError as e:
            raise _store_error(key, e) from e
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(value)
            os.replace(tmp, path)
        except BaseException as e:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if isinstance(e, OSError):  # a directory where the key should be, a full disk...
                raise _store_error(key, e) from e
            raise

    def delete(self, key):
        self.check_writable(key)
        try:
            os.unlink(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as e:
            raise _store_error(key, e) from e

    def exists(self, key):
        return os.path.isfile(self._path(key))

    @staticmethod
    def _is_internal(name):
        return name.startswith(TEMP_PREFIX)

    def list_prefix(self, prefix):
        prefix = validate_prefix(prefix)
        base = os.path.join(self.root, *prefix.split("/")) if prefix else self.root
        keys = []
        for dirpath, _, filenames in os.walk(base):
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in filenames:
                if not self._is_internal(name):
                    keys.append(name if rel == "." else f"{rel}/{name}")
        return keys

    def list_dir(self, prefix):
        prefix = validate_prefix(prefix)
        base = os.path.join(self.root, *prefix.split("/")) if prefix else self.root
        try:
            return sorted(n for n in os.listdir(base) if not self._is_internal(n))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise _store_error(prefix, e) from e

    @contextlib.contextmanager
    def lock(self, key):
        """Exclusive across threads and processes; the kernel drops the lock when its holder dies."""
        with super().lock(key):
            path = self._path(key)
            fd = lock_key(LOCK_DIR, path)
            try:
                yield
            finally:
                unlock_key(fd, path)
