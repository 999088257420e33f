"""What the model checker's other processes do (tests/face/test_api_model.py): open the array
afresh and write, as another program would. Run as a script, it writes one region when told
to, so that the checker can kill it at a moment of its choosing."""
import json
import sys

import numpy as np

import zarrcore


def region_value(seed, shape):
    """The values the killed writer writes: the same in both processes."""
    return np.random.default_rng(seed).integers(-1000, 1000, size=shape, dtype="i4")


def write_region(address, selection, value):
    """`a[selection] = value` in this process, on the array at `address` (path or URL, and
    its storage options)."""
    url, options = address
    zarrcore.open_array(url, mode="r+", storage_options=options)[selection] = value


def main():
    """`model_child.py JSON`: (address, [[start, stop] per axis], seed). Opens the array, says
    "ready", and writes once a line arrives on stdin."""
    address, bounds, seed = json.loads(sys.argv[1])
    url, options = address
    a = zarrcore.open_array(url, mode="r+", storage_options=options)
    key = tuple(slice(lo, hi) for lo, hi in bounds)
    value = region_value(seed, tuple(hi - lo for lo, hi in bounds))
    print("ready", flush=True)
    sys.stdin.readline()
    a[key] = value
    print("written", flush=True)


if __name__ == "__main__":
    main()
