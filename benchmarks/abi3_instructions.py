#!/usr/bin/env python3
"""Instructions per operation of the bindings' hot paths, to compare two builds of zarrcore
(the stable-ABI build, setup.py's ZARRCORE_LIMITED_API=1, against the per-version one) where
the machine is too loaded for wall-clock times to tell 2% apart. Each operation runs K times
inside `itertools.starmap`, so that callgrind counts exactly those instructions (and nothing
of the start-up, whose count varies from run to run by a few per cent):

    valgrind --tool=callgrind --toggle-collect=starmap_next --callgrind-out-file=OUT \
        python benchmarks/abi3_instructions.py OP K        # "Collected" on stderr

with PYTHONPATH naming the build to measure (an in-place build), PYTHONHASHSEED fixed. OP:

  small_read    the whole read of run.py's `small` array (1000x1000 float32 in 10x10 zstd
                chunks: 10,000 chunks)
  small_write   its whole write into a new array (the first write creates the chunk files,
                the others replace them; remove --out between runs)
  one_chunk     one_chunk.py's `a[t]`: 200 reads of one random one-sample chunk of its
                --layout (plain, or sharded)
  handle_read   the same samples read by the native handle, ArrayHandle.read
  small_chunk   200 reads of one random 10x10 chunk of `small` (400 bytes each: the
                per-call work of the bindings weighs most here)

The thread pool is held to one thread, so that the reads and writes run in the calling
thread, which callgrind's toggle follows. --small and --one-root name the arrays (run.py's
data directory, one_chunk.py's --root: run those once first).
"""
import argparse
import collections
import itertools

import numpy as np

import zarrcore


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("op", choices=["small_read", "small_write", "one_chunk", "handle_read",
                                  "small_chunk"])
    p.add_argument("k", type=int)
    p.add_argument("--small", default="benchmarks/data/small1000/ref/small.zarr")
    p.add_argument("--one-root", default="/tmp/zarrcore-one-chunk")
    p.add_argument("--layout", choices=["plain", "sharded"], default="plain")
    p.add_argument("--out", default="/tmp/zarrcore-abi3-small-out.zarr")
    args = p.parse_args()
    zarrcore.config.set(num_threads=1)
    # (Opened, and each read once, before the count: the first reads' one-time work.)
    small = zarrcore.open_array(args.small, mode="r")
    data = small[...]
    one = zarrcore.open_array(f"{args.one_root}/{args.layout}.zarr", mode="r")
    rng = np.random.default_rng(1)
    steps = rng.integers(0, one.shape[0], 200).tolist()
    corners = [(slice(10 * r, 10 * r + 10), slice(10 * c, 10 * c + 10))
               for r, c in rng.integers(0, small.shape[0] // 10, (200, 2)).tolist()]
    handle = one.native_handle()
    starts, shapes = [[t, 0, 0] for t in steps], [(1, *one.shape[1:])] * len(steps)
    one[steps[0]]
    small[corners[0]]
    handle.read(starts[0], shapes[0])
    if args.op == "small_read":
        def once():
            small[...]
    elif args.op == "small_write":
        out = zarrcore.create_array(args.out, shape=small.shape, chunks=small.chunks,
                                    dtype=small.dtype, overwrite=True)

        def once():
            out[...] = data
    elif args.op == "small_chunk":
        def once():
            collections.deque(map(small.__getitem__, corners), 0)
    elif args.op == "one_chunk":
        def once():
            collections.deque(map(one.__getitem__, steps), 0)
    else:
        def once():
            collections.deque(map(handle.read, starts, shapes), 0)
    collections.deque(itertools.starmap(once, itertools.repeat((), args.k)), 0)
    print(args.op, args.k, zarrcore.__file__)


if __name__ == "__main__":
    main()
