"""A structure-aware fuzzer for metadata that is slow or raises outside ZarrcoreError.

libFuzzer mutates bytes, which rarely keeps JSON valid and never reaches values such as a
shape of 2**40 or ten thousand codecs. This one parses the metadata seeds of
tests/support/fuzz/corpus/metadata/, replaces a random value in them with an extreme one (huge or
negative numbers, long strings and lists, deep nesting, other seeds' values), runs the
result through the metadata harness, and reports every input slower than --slow seconds or
raising outside ZarrcoreError, saving it to --out. Run from the repository root:
    python tests/support/fuzz/slow_metadata.py --seconds 300
"""
import argparse
import json
import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harnesses import SEPARATOR, metadata  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "metadata")
MAX_INPUT = 1 << 20  # the promise is about inputs under 1 MB


def extremes(rng):
    """Values that stress parsing and what is derived from it."""
    n = rng.choice([2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**64, 10**30, -1, -(2**63), 0, 33])
    return rng.choice([
        n, -n, float(n), 1e308, -1e308, float("nan"), float("inf"),
        "x" * rng.choice([10**4, 10**6]), "NaN", "Infinity", "0x" + "f" * 64, "AAAA" * 10**5,
        [1] * rng.choice([33, 1000, 10**5]), [n] * rng.choice([1, 2, 32]),
        [[[]]] * 1000, {"k%d" % i: i for i in range(10**4)},
        [{"name": "bytes"}] * 1000, [{"name": "crc32c"}] * 10**4,
        [{"id": "zlib"}] * 1000, {"id": "blosc", "typesize": n, "blocksize": n},
        {"name": "transpose", "configuration": {"order": list(range(rng.choice([2, 33, 1000])))}},
        {"id": "categorize", "labels": ["a"] * 10**5, "dtype": "<U1", "astype": "|u1"},
        {"id": "quantize", "digits": n, "dtype": "<f8"}, {"id": "bitround", "keepbits": n},
        {"id": "fixedscaleoffset", "scale": n, "offset": n, "dtype": "<f8", "astype": "<i8"},
        {"name": "raw_bytes", "configuration": {"length_bytes": n}}, "r%d" % abs(n),
        [["f%d" % i, "<i4"] for i in range(rng.choice([100, 10**4]))],
        [["a", "<f8", [n]]], "|S%d" % abs(n), "<U%d" % abs(n), "|V%d" % abs(n),
    ])


def paths(doc, prefix=()):
    """Every (path, value) in a JSON document, containers included."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def replace(doc, path, value):
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


def load_seeds():
    seeds = []
    for name in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, name), "rb") as f:
            data = f.read()
        parts = data[1:].split(SEPARATOR)
        try:
            docs = [json.loads(p) for p in parts]
        except (ValueError, RecursionError):  # chunks, and the too-deep regression inputs
            continue
        seeds.append((data[0], docs))
    return seeds


def mutate(rng, seeds):
    kind, docs = rng.choice(seeds)
    docs = json.loads(json.dumps(docs))
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(docs))
        candidates = list(paths(docs[i]))
        path, _ = rng.choice(candidates)
        if rng.random() < 0.2:
            _, other = rng.choice(list(paths(rng.choice(rng.choice(seeds)[1]))))
            value = json.loads(json.dumps(other))
        else:
            value = extremes(rng)
        docs[i] = replace(docs[i], path, value)
    return bytes([kind]) + SEPARATOR.join(json.dumps(d).encode() for d in docs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--slow", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="build/fuzz/slow-metadata")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    seeds = load_seeds()
    end, runs, found = time.time() + args.seconds, 0, 0
    while time.time() < end:
        data = mutate(rng, seeds)
        if len(data) > MAX_INPUT:
            continue
        runs += 1
        t = time.perf_counter()
        try:
            metadata(data)
            problem = None
        except Exception:  # the harness lets only non-ZarrcoreErrors through
            problem = traceback.format_exc().strip().splitlines()[-1]
        elapsed = time.perf_counter() - t
        if elapsed > args.slow:
            problem = f"{elapsed:.1f} s"
        if problem:
            found += 1
            name = os.path.join(args.out, f"finding-{args.seed}-{runs}")
            with open(name, "wb") as f:
                f.write(data)
            print(f"{name}: {problem}", flush=True)
    print(f"{runs} inputs, {found} findings")


if __name__ == "__main__":
    main()
