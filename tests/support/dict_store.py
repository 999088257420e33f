"""A store of its own kind over a dict, for tests of what zarrcore does with stores it does
not know."""
import zarrcore


class DictStore(zarrcore.Store):
    """Keys and their bytes in the dict `data` (a new one when not given): the calls a Store
    must have, and nothing more (no lock, no version, no ranged read of its own)."""

    def __init__(self, data=None):
        super().__init__()
        self.data = {} if data is None else data

    def get(self, key, start=None, stop=None):
        value = self.data.get(key)
        return None if value is None else value[start:stop]

    def set(self, key, value):
        self.data[key] = bytes(value)

    def delete(self, key):
        self.data.pop(key, None)

    def exists(self, key):
        return key in self.data

    def list_prefix(self, prefix):
        return [k for k in list(self.data) if not prefix or k.startswith(prefix + "/")]

    def list_dir(self, prefix):
        head = prefix + "/" if prefix else ""
        return sorted({k[len(head):].split("/")[0] for k in list(self.data)
                       if k.startswith(head)})
