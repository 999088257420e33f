#!/usr/bin/env python3
"""Random samples of a sharded and an unsharded array over a loopback S3 (moto).

    python benchmarks/sharded_s3.py                  # 256 samples, best and worst of 3 runs
    python benchmarks/sharded_s3.py --samples 64 --repeats 1   # a quick smoke run

An ERA5-like float32 array (time, 64, 128), zstd, one time step per chunk (unsharded) or
per inner chunk of shards of 32 time steps, on moto's S3 server on 127.0.0.1, read through a
proxy that counts requests. Workloads: `single` reads random time steps one `a[t]` at a
time; `batch` reads them 32 at a time (`a[list]`). Each run opens the arrays anew, reads the
samples once (shard indexes unknown: `first pass`) and again in another order (`second
pass`). The sharded array is read twice per run: as it is, and with the array keeping no
shard indexes (`engine.SHARD_INDEX_BYTES = 0`, as before they were kept), interleaved so
that a busy machine weighs on both alike. Prints samples/s and requests per sample; run
from the checkout's root with its virtualenv (the test extra has moto).
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import zarrcore  # noqa: E402
from zarrcore import engine  # noqa: E402
from servers import CountingProxy, MotoServer  # noqa: E402

T, SHAPE = 512, (64, 128)
SHARD = 32


def make_arrays(server, bucket):
    data = np.random.default_rng(0).standard_normal((T, *SHAPE)).astype("float32")
    for name, shards in (("unsharded", None), ("sharded", (SHARD, *SHAPE))):
        a = zarrcore.create_array(f"s3://{bucket}/{name}", shape=data.shape, dtype="float32",
                                  chunks=(1, *SHAPE), shards=shards,
                                  storage_options=server.storage_options())
        a[...] = data
    return data


def one_pass(a, data, order, workload):
    started = time.perf_counter()
    if workload == "single":
        for t in order:
            got = a[int(t)]
            assert np.array_equal(got, data[t])
    else:
        for batch in order.reshape(-1, 32):
            got = a[np.sort(batch)]
            assert np.array_equal(got, data[np.sort(batch)])
    return len(order) / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = MotoServer()
    try:
        bucket = server.new_bucket()
        data = make_arrays(server, bucket)
        proxy = CountingProxy(server.port)
        rng = np.random.default_rng(1)
        results = {}
        kept = engine.SHARD_INDEX_BYTES
        for run in range(args.repeats):
            for layout in ("unsharded", "sharded, no indexes kept", "sharded"):
                name = layout.partition(",")[0]
                engine.SHARD_INDEX_BYTES = 0 if "no indexes" in layout else kept
                for workload in ("single", "batch"):
                    a = zarrcore.open_array(f"s3://{bucket}/{name}", mode="r",
                                            storage_options=server.storage_options(
                                                proxy.endpoint))
                    for which in ("first pass", "second pass"):
                        order = rng.permutation(T)[:args.samples]
                        before = proxy.requests
                        rate = one_pass(a, data, order, workload)
                        per_sample = (proxy.requests - before) / len(order)
                        results.setdefault((layout, workload, which), []).append(
                            (rate, per_sample))
        print(f"{'layout':25} {'workload':8} {'pass':12} {'samples/s':>18} "
              f"{'requests/sample':>16}")
        for (name, workload, which), runs in results.items():
            rates = [r for r, _ in runs]
            per = [p for _, p in runs]
            print(f"{name:25} {workload:8} {which:12} {min(rates):8.0f} - {max(rates):<8.0f}"
                  f" {min(per):7.2f} - {max(per):<6.2f}")
        proxy.stop()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
