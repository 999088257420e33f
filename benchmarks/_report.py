"""RESULTS.md and results.png from the results dictionary of run.py."""
import os
import re

import _cold
import _common as C
from native import contenders as native_contenders

NOTES_BEGIN = "<!-- BEGIN NOTES (kept by run.py when it rewrites this file) -->"
NOTES_END = "<!-- END NOTES -->"
DEFAULT_NOTES = """\
_What limits each workload now (decode GB/s, copy, I/O, Python overhead), from a profile
(py-spy, perf, callgrind). Written by hand; run.py keeps this section when it rewrites the
file._
"""

RATIO_TARGET = 0.5
FLOOR_TARGET = 1.15  # the sharded write, quiet and busy: at most this times its encode floor
THREADS_TARGET = 1.8
RSS_TARGET = 1.10
MIB = 2 ** 20

TITLES = {
    "read_all": "Read all in one call (s)",
    "read_chunks": "Read chunk by chunk, shard by shard when sharded, sequentially (s)",
    "write_all": "Write all in one call (s)",
}
COLD_TITLES = {
    "read_all_cold": "Read all in one call, cold cache (s)",
    "read_chunks_cold": "Read chunk by chunk, shard by shard when sharded, cold cache (s)",
}
ROUNDTRIP_TITLES = {
    "roundtrip": "Round trip: read all, write it to a new array (s / peak MiB)",
    "roundtrip_cold": "Round trip, cold cache (s / peak MiB)",
    "roundtrip_stream": "Streaming copy: the array copied to a new one by each library's own "
                        "array-to-array copy (zarrcore `b[...] = a`, tensorstore "
                        "`b.write(a)`, zarr-python `from_array`) (s / peak MiB)",
    "roundtrip_stream_cold": "Streaming copy, cold cache (s / peak MiB)",
}
COLD_METHODS = {
    "drop_caches": "`sync; echo 3 > /proc/sys/vm/drop_caches` (the whole page cache)",
    "fadvise": "`posix_fadvise(POSIX_FADV_DONTNEED)` on every file of the dataset",
}


def _ok(r):
    return r is not None and not r.get("error") and r.get("best") is not None and r.get("ok") is not False


def _libs(results):
    """The libraries of the run in display order: the peers, zarrcore, then the baseline."""
    return [lib for lib in (*C.LIBS, C.BASELINE) if lib in results["libs"]]


def _has_baseline(results):
    return C.BASELINE in results["libs"]


def _vs_baseline(res):
    """zarrcore's best time over the baseline's, as a table cell."""
    zc, base = res.get("zarrcore"), res.get(C.BASELINE)
    return f"{zc['best'] / base['best']:.2f}×" if _ok(zc) and _ok(base) else "-"


def _before_after(results, res=None):
    """The `zarrcore ÷ baseline` column of a table: its head (no `res`) or its cell for the
    timings `res`; nothing in a run without a baseline."""
    if not _has_baseline(results):
        return []
    return ["zarrcore ÷ baseline"] if res is None else [_vs_baseline(res)]


def _extra(cells):
    """Markdown for cells appended to a row that ends with `|`."""
    return "".join(f" {c} |" for c in cells)


def _role(lib, status):
    """The target column of a row-per-library table: zarrcore's status, else what it is."""
    if lib == "zarrcore":
        return status
    roles = {C.BASELINE: "(baseline)", C.ZARRCORE_PIPELINE: "(zarrcore's pipeline)"}
    return roles.get(lib, "(peer)")


def compare(res):
    """zarrcore's best time against the best valid peer: (ratio, best_peer_name, status, note)."""
    zc = res.get("zarrcore")
    peers = {lib: res[lib]["best"] for lib in C.PEERS if lib in res and _ok(res[lib])}
    if not peers:
        return None, None, "n/a", "no peer result"
    best_peer = min(peers, key=peers.get)
    if zc is None:
        return None, best_peer, "n/a", "zarrcore not run"
    if zc.get("error"):
        return None, best_peer, "n/a", "zarrcore error"
    if zc.get("ok") is False:
        return None, best_peer, "WRONG", "zarrcore result differs from expected"
    if zc.get("best") is None:
        return None, best_peer, "n/a", "no zarrcore time"
    ratio = zc["best"] / peers[best_peer]
    return ratio, best_peer, ("PASS" if ratio <= RATIO_TARGET else "FAIL"), ""


def _best_peer_seconds(results, workload, variant):
    """The best valid peer's best time for one workload and variant, or None."""
    res = results["timings"].get(f"{workload}/{variant}", {})
    times = [res[lib]["best"] for lib in C.PEERS if lib in res and _ok(res[lib])]
    return min(times) if times else None


def _num(v, fmt=None):
    """Seconds with enough digits for both smoke tests and full runs."""
    if fmt:
        return fmt.format(v)
    return f"{v:.4f}" if v < 0.1 else f"{v:.3f}"


def _cell(r, scale=1.0, fmt=None):
    if r is None:
        return "-"
    if r.get("error"):
        return "error"
    if r.get("best") is None:
        return "-"
    text = _num(r["best"] * scale, fmt)
    return text + (" **WRONG**" if r.get("ok") is False else "")


def _per_chunk(r):
    """µs per chunk for the small-chunk workloads."""
    n = r.get("nchunks") if r else None
    return 1e6 / n if n else None


def _timing_table(results, key_prefix, variants, scale_of=None, fmt=None):
    libs = _libs(results)
    head = ["variant", *libs, "best peer", "zarrcore / best peer", f"target ≤ {RATIO_TARGET}",
            *_before_after(results)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in variants:
        res = results["timings"].get(f"{key_prefix}/{v}")
        if res is None:
            continue
        cells = []
        for lib in libs:
            r = res.get(lib)
            scale = scale_of(r) if scale_of else 1.0
            cells.append(_cell(r, scale or 1.0, fmt))
        ratio, best_peer, status, note = compare(res)
        rtext = f"{ratio:.2f}×" if ratio is not None else (note or "-")
        rows.append("| " + " | ".join([v, *cells, best_peer or "-", rtext, status,
                                       *_before_after(results, res)]) + " |")
    return "\n".join(rows)


def _peak(r):
    """The highest peak-RSS increase of a library's rounds, or None."""
    return max(r["peaks"]) if r and r.get("peaks") else None


def _roundtrip_table(results, key):
    """Time / peak RSS increase per library and variant; the ratio is of the times."""
    libs = _libs(results)
    head = ["variant", *libs, "best peer", "zarrcore / best peer", f"target ≤ {RATIO_TARGET}",
            *_before_after(results)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in C.CUBE_VARIANTS:
        res = results["timings"].get(f"{key}/{v}")
        if res is None:
            continue
        cells = []
        for lib in libs:
            cell, peak = _cell(res.get(lib)), _peak(res.get(lib))
            cells.append(cell + (f" / {peak / MIB:.1f}" if peak is not None else ""))
        ratio, best_peer, status, note = compare(res)
        rtext = f"{ratio:.2f}×" if ratio is not None else (note or "-")
        rows.append("| " + " | ".join([v, *cells, best_peer or "-", rtext, status,
                                       *_before_after(results, res)]) + " |")
    return "\n".join(rows)


def _decode_floor(results, variant):
    """Seconds of decoding every chunk of `variant` on all CPUs at the single-thread rates of
    *Machine limits*, or None when they were not measured (or nothing is decoded)."""
    lim = results.get("limits") or {}
    rate = {"zstd": lim.get("zstd_decode_gbps_1thread"),
            "sharded": lim.get("inner_decode_gbps_1thread")}.get(variant)
    ds = C.make_datasets(results["args"]["n"])[variant]
    cpus = _int(results["machine"].get("cpus")) or 1
    return ds.nbytes / (cpus * rate * 1e9) if rate else None


def _streams_text(device):
    """How the probe's bandwidth was reached (runs before the two-pass probe had one pass)."""
    if "streams_gbps" not in device:
        return ""
    return (f" (the faster of one stream, {device['one_stream_gbps']:.2f} GB/s, and "
            f"{device['streams']} streams over its parts, {device['streams_gbps']:.2f} GB/s)")


def _cold_floor_lines(results):
    """The I/O floors of the cold reads beside the decode floor and the measured times."""
    cold = results.get("cold") or {}
    device, stored = cold.get("device"), cold.get("stored") or {}
    keys = [k for k in ("read_all_cold", "read_chunks_cold", "roundtrip_cold",
                        "roundtrip_stream_cold")
            if any(t.startswith(k + "/") for t in results["timings"])]
    if not device or not keys:
        return []
    gbps, lat = device["seq_gbps"], device["random_latency_s"]
    head = _before_after(results)
    L = [f"I/O floors. The device under the data directory, measured once in this run from a "
         f"cold cache: {gbps:.2f} GB/s reading a {device['probe_bytes'] / MIB:.0f} MiB file "
         f"sequentially in {_cold.PROBE_BLOCK >> 20} MiB requests{_streams_text(device)}, "
         f"{lat * 1e3:.3f} ms per "
         f"random {device['random_block']}-byte read (readahead off, one in flight). "
         "*Sequential* is the stored bytes at that bandwidth: no reader can fetch them "
         "faster. *Random* is one request per stored file at that latency, one at a time: "
         "what a reader pays that waits for every file in turn; *by chunk* the same with one "
         "request per (inner) chunk, as a reader of a shard's chunks by byte ranges makes. "
         "*Decode* is decoding every chunk on all CPUs at the rates of *Machine limits* "
         "(workload `limits`).\n",
         "| workload | variant | stored MiB | files | sequential | random | random by chunk "
         "| decode | zarrcore | best peer |" + _extra(head),
         "|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(head)]
    for key in keys:
        for v in C.CUBE_VARIANTS:
            res = results["timings"].get(f"{key}/{v}")
            if res is None or v not in stored:
                continue
            nbytes, nfiles = stored[v]["bytes"], stored[v]["files"]
            nchunks = C.make_datasets(results["args"]["n"])[v].nchunks()
            decode = _decode_floor(results, v)
            zc = res.get("zarrcore")
            peer = _best_peer_seconds(results, key, v)
            L.append(f"| {key} | {v} | {nbytes / MIB:.1f} | {nfiles} | "
                     f"{_num(nbytes / (gbps * 1e9))} | {_num(nfiles * lat)} | "
                     f"{_num(nchunks * lat)} | "
                     f"{_num(decode) if decode is not None else '-'} | "
                     f"{_num(zc['best']) if _ok(zc) else '-'} | "
                     f"{_num(peer) if peer is not None else '-'} |"
                     + _extra(_before_after(results, res)))
    L.append("")
    return L


def _cold_method_text(results):
    cold = results.get("cold") or {}
    methods = cold.get("methods") or []
    if not methods:
        return None
    text = "; ".join(COLD_METHODS.get(m, m) for m in methods)
    if "fadvise" in methods:
        text += (" (drop_caches was not allowed)" if cold.get("requested") == "auto"
                 else " (`--cold-method fadvise`)")
    return text


def _xarray_floor_lines(results):
    """The floor of each xarray workload beside the 0.5x target it bounds."""
    floors = results.get("xarray_floors") or {}
    if not floors:
        return []
    head = _before_after(results)
    L = ["Floors. Load: zstd decoding of every stored (inner) chunk alone, on all CPUs into "
         "reused buffers, files already in memory (`decode_floor` in "
         "benchmarks/xarray_bench.py); the load decodes every chunk once, so no reader can take "
         "less. Mean: that decoding plus the same dask mean over the dataset already held in the "
         "workers' memory, in zarrcore's dask chunks (`time_mean_in_memory`): the cluster, "
         "dask's reduction and numpy with nothing to read.\n",
         "| variant | workload | decode | in-memory mean | floor | zarrcore | zarrcore / floor "
         f"| {RATIO_TARGET}× best peer | {RATIO_TARGET}× best peer / floor |" + _extra(head),
         "|---|---|---|---|---|---|---|---|---|" + "---|" * len(head)]
    for variant, floor in floors.items():
        for wl in ("xarray_load", "xarray_mean"):
            res = results["timings"].get(f"{wl}/{variant}", {})
            zc = res.get("zarrcore") or {}
            peer = _best_peer_seconds(results, wl, variant)
            in_memory = floor.get("mean_in_memory") if wl == "xarray_mean" else 0.0
            if zc.get("best") is None or peer is None or in_memory is None:
                continue
            total = floor["best"] + in_memory
            target = RATIO_TARGET * peer
            L.append(f"| {variant} | {wl.split('_')[1]} | {_num(floor['best'])} | "
                     f"{_num(in_memory) if in_memory else '-'} | {_num(total)} | "
                     f"{_num(zc['best'])} | {zc['best'] / total:.2f}× | {_num(target)} | "
                     f"{target / total:.2f}× |" + _extra(_before_after(results, res)))
    L.append("")
    return L


def _targets(results):
    rows = ["| target | measured | status |", "|---|---|---|"]
    names = {"read_all": "read all", "read_all_cold": "read all, cold cache",
             "read_chunks": "read chunk by chunk",
             "read_chunks_cold": "read chunk by chunk, cold cache", "write_all": "write all",
             "roundtrip": "round trip", "roundtrip_cold": "round trip, cold cache",
             "roundtrip_stream": "streaming copy",
             "roundtrip_stream_cold": "streaming copy, cold cache",
             "xarray_load": "xarray open and load",
             "xarray_mean": "dask mean on a LocalCluster"}
    for wl in names:
        for v in (("plain", "sharded") if wl.startswith("xarray_") else C.CUBE_VARIANTS):
            res = results["timings"].get(f"{wl}/{v}")
            if res is None:
                continue
            ratio, best_peer, status, note = compare(res)
            measured = (f"{ratio:.2f}× ({_num(res['zarrcore']['best'])} s vs {best_peer} "
                        f"{_num(res[best_peer]['best'])} s)") if ratio is not None else note
            rows.append(f"| {names[wl]}, {v}: ≤ {RATIO_TARGET}× best peer | {measured} | {status} |")
    for prefix, wl, name in (("small", "read_all", "read"),
                             ("small_cold", "read_all", "read, cold cache"),
                             ("small", "write_all", "write")):
        res = results["timings"].get(f"{prefix}/{wl}")
        if res is None:
            continue
        ratio, best_peer, status, note = compare(res)
        if ratio is not None:
            zc = res["zarrcore"]["best"] * _per_chunk(res["zarrcore"])
            bp = res[best_peer]["best"] * _per_chunk(res[best_peer])
            measured = f"{ratio:.2f}× ({zc:.1f} µs/chunk vs {best_peer} {bp:.1f} µs/chunk)"
        else:
            measured = note
        rows.append(f"| small chunks {name}: ≤ {RATIO_TARGET}× best peer µs/chunk "
                    f"| {measured} | {status} |")
    for cond in ("quiet", "busy"):
        ev = _busy_eval(results, cond)
        if ev is not None:
            rows.append(f"| sharded write, {cond}: ≤ {FLOOR_TARGET}× encode floor and ahead of "
                        f"every peer | {ev[1]} | {ev[0]} |")
    speedup, status, note = _thread_speedup(results, "zarrcore")
    if speedup is not None or note != "not run":
        measured = f"{speedup:.2f}×" if speedup is not None else note
        rows.append(f"| 2 user threads ≥ {THREADS_TARGET}× faster than 1 (zarrcore pool at 1) "
                    f"| {measured} | {status} |")
    for row in _native_targets(results.get("native")):
        rows.append(row)
    for r in results["rss"]:
        if r.get("lib") != "zarrcore":
            continue
        ratio, status, measured = _rss_eval(r)
        rows.append(f"| peak RSS of a whole-array read ({r['variant']}) ≤ output + 10% "
                    f"| {measured} | {status} |")
    return "\n".join(rows)


def _native_targets(native):
    """Target rows of the native workload (benchmarks/native.py)."""
    if not native or native.get("error"):
        return [f"| native region reads | {native['error']} | FAIL |"] if native else []
    rows = []
    n = native["threads"]
    mib = f"{native.get('cache_bytes', 0) / (1 << 20):g} MiB"
    for prefix, what in [("", "no cache"), ("cached_", f"both with a {mib} cache")]:
        ratio = native.get(prefix + "native_vs_tensorstore")
        if ratio is not None:
            rows.append(f"| native region reads, {n} threads, {what}: ≤ {RATIO_TARGET}× "
                        f"tensorstore | {ratio:.2f}× ({native[f'{prefix}native_{n}']:.2f} s vs "
                        f"{native[prefix + 'tensorstore']:.2f} s) "
                        f"| {'PASS' if ratio <= RATIO_TARGET else 'FAIL'} |")
        scaling = native.get(prefix + "native_scaling")
        if scaling is not None:
            rows.append(f"| native region reads, {what}: {n} threads ≥ {THREADS_TARGET}× one | "
                        f"{scaling:.2f}× | {'PASS' if scaling >= THREADS_TARGET else 'FAIL'} |")
    return rows


def _native_section(native, device):
    n = native["threads"]
    lines = ["## Region reads from compiled code (native)\n",
             f"{native['reads']} random {native['edge']}³ regions of `sharded` (N={native['n']}), "
             f"the same for each: zarrcore's nogil array API from pthreads of a C extension "
             f"(benchmarks/native.py), {n} Python threads calling `a[...]`, and tensorstore with "
             f"{n} read futures in flight and its concurrency limits at {n}; then zarrcore's "
             f"handle with a decoded-chunk cache and tensorstore with a cache_pool of the same "
             f"size, each filled by a warm-up pass. Load average "
             f"{native['loadavg_start']:.2f} at start, {native['loadavg_end']:.2f} at end.\n",
             "| reader | seconds | µs per region |", "|---|---|---|"]
    for key, label in native_contenders(n, native.get("cache_bytes", 0)):
        if key in native:
            lines.append(f"| {label} | {native[key]:.3f} | "
                         f"{1e6 * native[key] / native['reads']:.0f} |")
    lines.append("")
    if "decode_floor" in native:
        floor = native["decode_floor"]
        line = (f"Decode floor without a cache: zstd decoding of every inner chunk each region "
                f"touches ({native['decoded_chunks']} in all), once per region, on {n} threads "
                f"into reused buffers from frames already in memory: {floor:.3f} s. zarrcore's "
                f"{n} native threads take {native[f'native_{n}'] / floor:.2f}× that")
        if "tensorstore" in native:
            line += (f"; {RATIO_TARGET}× tensorstore would be "
                     f"{RATIO_TARGET * native['tensorstore'] / floor:.2f}× it")
        lines += [line + ".", ""]
    if native.get("cold_method"):
        line = (f"Cold page cache: dropped before each cold row by "
                f"{COLD_METHODS.get(native['cold_method'], native['cold_method'])}. The regions "
                f"touch {native['touched_chunks']} distinct inner chunks, each read from the "
                f"device once")
        if device:
            lat = device["random_latency_s"]
            line += (f": at {lat * 1e3:.3f} ms per random read, "
                     f"{native['touched_chunks'] * lat:.3f} s one at a time, "
                     f"{native['touched_chunks'] * lat / n:.3f} s with {n} in flight")
        lines += [line + ".", ""]
    return lines


def _busy_eval(results, cond):
    """(status, measured text) of the sharded write in condition `cond` against its encode
    floor and the peers, or None when not run."""
    res = results["timings"].get(f"write_busy/{cond}")
    floor = results.get("floors", {}).get(cond)
    if res is None or not _ok(floor):
        return None
    zc = res.get("zarrcore")
    if not _ok(zc):
        return "n/a", "no valid zarrcore time"
    ratio = zc["best"] / floor["best"]
    _, best_peer, _, _ = compare(res)
    ahead = best_peer is None or zc["best"] < res[best_peer]["best"]
    text = f"{ratio:.2f}× floor ({_num(zc['best'])} s vs {_num(floor['best'])} s)"
    if best_peer:
        text += f", {zc['best'] / res[best_peer]['best']:.2f}× {best_peer}"
    return ("PASS" if ratio <= FLOOR_TARGET and ahead else "FAIL"), text


def _busy_table(results):
    """Rows per condition: floor, each library, zarrcore against the floor and the best peer,
    and in how many rounds zarrcore was the fastest library."""
    libs = _libs(results)
    head = ["condition", "encode floor", *libs, "zarrcore / floor", "zarrcore / best peer",
            "rounds zarrcore fastest", "target", *_before_after(results)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cond in ("quiet", "busy"):
        res = results["timings"].get(f"write_busy/{cond}")
        if res is None:
            continue
        floor = results["floors"].get(cond)
        ratio, best_peer, _, note = compare(res)
        zc = res.get("zarrcore") or {}
        # Fastest among zarrcore and the peers: the baseline is not a contender.
        times = {lib: r["times"] for lib, r in res.items() if _ok(r) and lib in C.LIBS}
        n = min((len(t) for t in times.values()), default=0)
        fastest = sum(1 for i in range(n)
                      if min(times, key=lambda lib: times[lib][i]) == "zarrcore")
        ev = _busy_eval(results, cond)
        rows.append("| " + " | ".join([
            cond, _cell(floor), *[_cell(res.get(lib)) for lib in libs],
            f"{zc['best'] / floor['best']:.2f}×" if _ok(zc) and _ok(floor) else "-",
            f"{ratio:.2f}×" if ratio is not None else (note or "-"),
            f"{fastest} of {n}" if "zarrcore" in times else "-",
            ev[0] if ev else "n/a", *_before_after(results, res)]) + " |")
    return "\n".join(rows)


def _thread_speedup(results, lib):
    one = results["threads"].get("1", {}).get(lib)
    two = results["threads"].get("2", {}).get(lib)
    if one is None or two is None:
        return None, "n/a", "not run"
    if one.get("error") or two.get("error"):
        return None, "n/a", "error"
    if one.get("ok") is False or two.get("ok") is False:
        return None, "WRONG", "wrong result"
    if not one.get("best") or not two.get("best"):
        return None, "n/a", "no time"
    s = one["best"] / two["best"]
    return s, ("PASS" if s >= THREADS_TARGET else "FAIL"), ""


def _rss_eval(r):
    if r.get("error"):
        return None, "n/a", "error: " + r["error"][:120]
    inc = r["maxrss_peak"] - r["rss_before"]
    ratio = inc / r["output_bytes"]
    status = "PASS" if ratio <= RSS_TARGET else "FAIL"
    if r.get("ok") is False:
        status = "WRONG"
    measured = (f"{ratio:.2f}× (+{inc / MIB:.1f} MiB for a {r['output_bytes'] / MIB:.1f} MiB "
                f"output; peak {r['maxrss_peak'] / MIB:.1f} MiB)")
    return ratio, status, measured


def _keep_notes(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return DEFAULT_NOTES
    m = re.search(re.escape(NOTES_BEGIN) + r"\n(.*?)" + re.escape(NOTES_END), text, re.S)
    return m.group(1) if m else DEFAULT_NOTES


def _section_marks(name):
    return f"<!-- BEGIN SECTION {name} -->", f"<!-- END SECTION {name} -->"


def _kept_sections(path):
    """The sections other benchmark scripts wrote into RESULTS.md (write_section), in order."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return []
    pattern = r"<!-- BEGIN SECTION (\S+) -->\n.*?<!-- END SECTION \1 -->"
    return [m.group(0) for m in re.finditer(pattern, text, re.S)]


def write_section(path, name, body):
    """Put `body` (markdown) into RESULTS.md as the section `name`, replacing its previous
    version; run.py keeps such sections when it rewrites the file."""
    begin, end = _section_marks(name)
    block = f"{begin}\n{body.rstrip()}\n{end}"
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = "# zarrcore benchmark results\n"
    pattern = re.escape(begin) + r"\n.*?" + re.escape(end)
    if re.search(pattern, text, re.S):
        text = re.sub(pattern, lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def write_markdown(results, path):
    a = results["args"]
    m = results["machine"]
    notes = _keep_notes(path)
    sections = _kept_sections(path)
    mem = m.get("mem_total_bytes")
    la0, la1 = results.get("loadavg_start"), results.get("loadavg_end")
    L = []
    L.append("# zarrcore benchmark results\n")
    L.append(f"Generated by `benchmarks/run.py` on **{results['date']}** "
             f"(`python benchmarks/run.py {_argline(a)}`). "
             "Regenerate with `make bench`; see [README.md](README.md).\n")
    cpus = _int(m.get("cpus")) or os.cpu_count() or 1
    busiest = _busiest(results)
    if _is_busy(results):
        L.append(f"> **Busy machine:** the 1-minute load average reached {busiest:.1f} on "
                 f"{cpus} CPUs during this run, so other work competed with every "
                 "measurement. Treat these numbers as a smoke test; measure on a quiet "
                 "machine.\n")
    L.append("## Machine\n")
    L.append(f"- CPU: {m.get('cpu_model')}; {m.get('cpus')} CPUs "
             f"({m.get('sockets')} socket × {m.get('cores_per_socket')} cores × "
             f"{m.get('threads_per_core')} threads per core)")
    if mem:
        L.append(f"- Memory: {mem / 2**30:.1f} GiB")
    L.append(f"- OS: {m.get('platform')}; Python {m.get('python')}"
             + (f" (`{m['executable']}`)" if m.get("executable") else ""))
    if m.get("uptime_start"):
        L.append(f"- `uptime` at start: {m['uptime_start']}; at end: "
                 f"{results.get('uptime_end') or '?'}")
    if la0 and la1:
        peak = results.get("loadavg_max")
        L.append(f"- Load average (1 min) at start / end: {la0[0]:.2f} / {la1[0]:.2f}"
                 + (f", highest seen {peak:.2f}" if peak else "")
                 + " (other work on the machine skews the numbers; compare ratios)")
    L.append(f"- zarrcore checkout: git {m.get('git_commit') or '?'}"
             + (" with uncommitted changes" if m.get("git_dirty") else ""))
    base = results.get("baseline")
    if base:
        L.append(f"- Baseline (`zarrcore-baseline`): git {base['commit'] or '?'}"
                 + (" with uncommitted changes" if base["dirty"] else "")
                 + f", the checkout at `{base['path']}`")
    L.append("")
    L.append("## Versions\n")
    L.append("| library | versions | imported from |")
    L.append("|---|---|---|")
    for lib in _libs(results):
        info = results["libs"][lib]
        if info.get("error"):
            L.append(f"| {lib} | unavailable: {info['error'][:200]} | |")
            continue
        v = ", ".join(f"{k} {val}" for k, val in info["versions"].items())
        L.append(f"| {lib} | {v} | `{info['module_path']}` |")
    L.append("")
    cold_method = _cold_method_text(results)
    L.append("## Method\n")
    L.append(
        f"- Best of {a['repeats']} after {a['warmup']} warm-up round(s). "
        "Each library runs in its own worker process; the libraries take turns within each "
        "round, in a rotating order, so that they see the same machine state.\n"
        + ("- Page cache: warm, except in the tables marked *cold cache*, where it was "
           "dropped before every round (warm-up included) of every library, after the array "
           f"was opened: {cold_method}.\n" if cold_method else "- Page cache: warm.\n")
        + "- zarr-python runs with its default codec pipeline (`BatchedCodecPipeline`); "
        "zarr-python-fused with its opt-in `FusedCodecPipeline` "
        f"(`{C.ZARR_PIPELINES['zarr-python-fused']}`); zarrs-python is zarr-python with "
        f"`codec_pipeline.path` `{C.ZARR_PIPELINES['zarrs-python']}` "
        "(strict: no silent fallback to zarr-python's pipeline); zarr-python-zarrcore is "
        f"zarr-python with zarrcore's pipeline `{C.ZARR_PIPELINES[C.ZARRCORE_PIPELINE]}`, "
        "shown beside the peers but not one of them (never the best peer).\n"
        + ("- Reads read one shared reference copy of each dataset, written by zarr-python. "
           if a.get("read_from", "ref") == "ref" else
           "- Reads read each library's own copy, from its write workload. ")
        + "Chunk by chunk: each block is read, checked and dropped; the sum of the read "
        "times counts. Writes go to a fresh directory per library and round; array creation "
        "is not timed.\n"
        "- Every read is compared element by element with the expected array, and every "
        "written array is read back with zarr-python and compared, so a fast wrong answer "
        "is marked **WRONG** and cannot count.\n"
        "- Round trip: open the array, read it whole, create a new array like it and write "
        "the data there, all timed; the copy is read back and checked. The figure after the "
        "time is the largest peak RSS increase (VmHWM, reset before the round) of any round.\n"
        "- Ratios are zarrcore's time over the best peer's ("
        + ", ".join(lib for lib in C.PEERS if lib in results["libs"]) + ")."
        + (f"\n- Before/after: `zarrcore-baseline` is zarrcore at git "
           f"{results['baseline']['commit'] or '?'} (`--baseline {results['baseline']['path']}`), "
           "run by zarrcore's worker code as one more library in the same rounds and checked "
           "the same way. It is not a peer: it never counts as the best peer, and the "
           "`zarrcore ÷ baseline` columns give zarrcore's time over its (below 1: zarrcore "
           "got faster). The native and object-store workloads do not run it."
           if results.get("baseline") else ""))
    L.append("")
    L.append("Datasets:\n")
    for k, d in results["datasets"].items():
        L.append(f"- `{k}`: {d}")
    L.append("")
    L.append("## Targets\n")
    L.append(_targets(results))
    L.append("")
    for wl, title in [*TITLES.items(), *COLD_TITLES.items()]:
        if any(k.startswith(wl + "/") for k in results["timings"]):
            L.append(f"## {title}\n")
            L.append(_timing_table(results, wl, C.CUBE_VARIANTS))
            L.append("")
    for wl, title in ROUNDTRIP_TITLES.items():
        if any(k.startswith(wl + "/") for k in results["timings"]):
            L.append(f"## {title}\n")
            L.append(_roundtrip_table(results, wl))
            L.append("")
    L.extend(_cold_floor_lines(results))
    if any(k.startswith("small/") for k in results["timings"]):
        L.append(f"## Small chunks (µs per chunk)\n")
        L.append(f"`small`: {results['datasets'].get('small')}; time of the whole-array "
                 "read or write divided by the number of chunks.\n")
        L.append(_timing_table(results, "small", ("read_all", "write_all"),
                               scale_of=_per_chunk, fmt="{:.1f}"))
        L.append("")
        if "small_cold/read_all" in results["timings"]:
            L.append("Cold cache:\n")
            L.append(_timing_table(results, "small_cold", ("read_all",),
                                   scale_of=_per_chunk, fmt="{:.1f}"))
            L.append("")
    if results["threads"]:
        L.append("## Thread scaling\n")
        L.append("User threads read disjoint runs of the inner chunks of the `sharded` "
                 "variant, one inner chunk per call. Each library's own pool is held to one "
                 "thread where it has a setting: zarrcore `config.set(num_threads=1)`, "
                 "tensorstore `data_copy_concurrency` and `file_io_concurrency` limit 1, "
                 "zarr-python and zarrs-python `threading.max_workers=1`, zarr-python-fused also "
                 "`codec_pipeline.max_workers=1`.\n")
        L.append(f"| library | 1 thread (s) | 2 threads (s) | speedup | target ≥ {THREADS_TARGET} |")
        L.append("|---|---|---|---|---|")
        for lib in _libs(results):
            one = results["threads"].get("1", {}).get(lib)
            two = results["threads"].get("2", {}).get(lib)
            if one is None and two is None:
                continue
            s, status, note = _thread_speedup(results, lib)
            L.append(f"| {lib} | {_cell(one)} | {_cell(two)} | "
                     f"{f'{s:.2f}×' if s is not None else note} | "
                     f"{_role(lib, status)} |")
        L.append("")
        if _has_baseline(results):
            L.append(f"zarrcore ÷ baseline: {_vs_baseline(results['threads'].get('1', {}))} "
                     f"with 1 thread, {_vs_baseline(results['threads'].get('2', {}))} with 2.\n")
        lim = results.get("limits") or {}
        if "cpu_scaling_2" in lim:
            L.append(f"Two cores ran {lim['cpu_scaling_2']:.2f}x as fast as one on pure "
                     f"computation in this run (*Machine limits*), the ceiling for any "
                     f"library here.\n")
    if any(k.startswith("xarray_") for k in results["timings"]):
        L.append("## xarray and dask (s)\n")
        L.append(f"`xarray`: {results['datasets'].get('xarray')}. Written by xarray with "
                 "zarr-python; zarrcore is engine=\"zarrcore\", zarr-python, "
                 "zarr-python-fused and zarrs-python engine=\"zarr\" with their pipelines. "
                 "Each time is a fresh process's second "
                 "run, the first untimed.\n")
        L.append("Open and load: `xr.open_dataset(path, engine=...).load()`.\n")
        L.append(_timing_table(results, "xarray_load", ("plain", "sharded")))
        L.append("")
        L.append("A dask reduction on a LocalCluster of 2 worker processes (1 thread each), "
                 "started untimed: `xr.open_dataset(path, engine=..., chunks={}).mean()"
                 ".compute()` (dask chunks follow `preferred_chunks`: zarrcore's shards, "
                 "zarr-python's inner chunks).\n")
        L.append(_timing_table(results, "xarray_mean", ("plain", "sharded")))
        L.append("")
        L.extend(_xarray_floor_lines(results))
    native = results.get("native")
    if native and not native.get("error"):
        L.extend(_native_section(native, (results.get("cold") or {}).get("device")))
    if any(k.startswith("write_busy/") for k in results["timings"]):
        busy = results.get("busy", {})
        hogs = busy.get("hogs", 1)
        L.append("## Sharded write, quiet and beside a CPU hog (s)\n")
        L.append(f"The `sharded` write of every library, and its *encode floor*: zstd at level "
                 f"3 (what level 0 means) of its "
                 f"{(results['floors'].get('quiet') or {}).get('nchunks', '')} inner chunks, from contiguous copies, on as many threads as CPUs taking "
                 f"chunks as they are free (python-zstandard). *Busy*: {hogs} pure-Python "
                 f"loop{'s' if hogs != 1 else ''} at `nice -n 19` "
                 + ("in this run's session" if busy.get("hog_session", "same") == "same"
                    else "each in a session of its own (outside this run's autogroup)")
                 + " runs beside each write. Every round runs both conditions; within one the "
                 f"libraries and the floor take turns in a rotating order. Best of "
                 f"{a['repeats']}.\n")
        L.append(_busy_table(results))
        L.append("")
    if results["rss"]:
        L.append("## Peak RSS of a whole-array read\n")
        L.append("A fresh process per row opens the array, reads one element (so imports "
                 "and pools are in place), then reads the whole array once. *Before* is the "
                 "RSS just before that read; *peak* is `ru_maxrss`. The target compares "
                 "peak − before with the output array's size.\n")
        L.append(f"| library | variant | output MiB | before MiB | peak MiB | peak − before MiB "
                 f"| (peak − before) / output | target ≤ {RSS_TARGET} |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in results["rss"]:
            if r.get("error"):
                L.append(f"| {r['lib']} | {r['variant']} | error: {r['error'][:150]} "
                         "| | | | | |")
                continue
            ratio, status, _ = _rss_eval(r)
            L.append(f"| {r['lib']} | {r['variant']} | {r['output_bytes'] / MIB:.1f} | "
                     f"{r['rss_before'] / MIB:.1f} | {r['maxrss_peak'] / MIB:.1f} | "
                     f"{(r['maxrss_peak'] - r['rss_before']) / MIB:.1f} | {ratio:.2f} | "
                     f"{_role(r['lib'], status)} |")
        L.append("")
    lim = results.get("limits")
    if lim:
        L.append("## Machine limits\n")
        L.append("Measured in one process, one thread, on the same data (floors under the "
                 "workloads):\n")
        if "cpu_scaling_2" in lim:
            L.append(f"- two cores against one: a pure-Python loop split between two processes "
                     f"(nothing shared) runs {lim['cpu_scaling_2']:.2f}x faster than whole in "
                     f"one (best time against best time; single trials "
                     f"{lim['cpu_scaling_2_low']:.2f}–{lim['cpu_scaling_2_high']:.2f}x), the "
                     f"ceiling for the thread-scaling target on this machine now")
        if "file_read_gbps" in lim:
            L.append(f"- reading the `plain` chunk files into a buffer (`readinto`): "
                     f"{lim['file_read_gbps']:.2f} GB/s")
        if "memcpy_gbps" in lim:
            L.append(f"- memcpy of {lim['output_bytes'] / MIB:.0f} MiB: {lim['memcpy_gbps']:.2f} GB/s")
        if "touch_output_seconds" in lim:
            L.append(f"- touching a fresh {lim['output_bytes'] / MIB:.0f} MiB output "
                     f"(page faults): {lim['touch_output_seconds']:.3f} s")
        if "zstd_decode_gbps_1thread" in lim:
            L.append(f"- zstd (numcodecs) decoding the `zstd` chunks: "
                     f"{lim['zstd_decode_gbps_1thread']:.2f} GB/s per thread; encoding at "
                     f"level 0: {lim['zstd_encode_gbps_1thread']:.2f} GB/s per thread; "
                     f"compression ratio {lim['zstd_ratio']:.2f}")
        if "inner_decode_gbps_1thread" in lim:
            L.append(f"- zstd (numcodecs) on the `sharded` variant's inner chunks: decoding "
                     f"{lim['inner_decode_gbps_1thread']:.2f} GB/s per thread, encoding "
                     f"{lim['inner_encode_gbps_1thread']:.2f} GB/s per thread; compression "
                     f"ratio {lim['inner_ratio']:.2f}")
            L.extend(_codec_floors(results, lim))
        for k, v in lim.items():
            if k.endswith("error"):
                L.append(f"- {k}: {v}")
        L.append("")
    if results.get("remote"):
        import remote

        L.append(remote.markdown(results["remote"]))
    L.append("## Failures\n")
    if results["failures"]:
        for f in results["failures"]:
            L.append(f"- {f['lib']} / {f['workload']}: {f['error'][:300]}")
    else:
        L.append("None: every read and write of every library checked out.")
    L.append("")
    L.append("## What limits each workload\n")
    L.append(NOTES_BEGIN)
    L.append(notes.rstrip("\n"))
    L.append(NOTES_END)
    L.append("")
    for section in sections:
        L.append(section)
        L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def _codec_floors(results, lim):
    """Lines comparing the codec work alone, spread perfectly over 2 threads, with the 0.5x
    targets it has to fit in."""
    nbytes = lim["output_bytes"]
    floors = [("read all, sharded", "read_all", "sharded", lim["inner_decode_gbps_1thread"]),
              ("write all, zstd", "write_all", "zstd", lim["zstd_encode_gbps_1thread"]),
              ("write all, sharded", "write_all", "sharded", lim["inner_encode_gbps_1thread"])]
    lines = ["", "Codec work alone on 2 threads (the rate above, perfectly parallel) against the "
             "0.5x target it must fit in:", ""]
    for label, workload, variant, gbps in floors:
        floor = nbytes / (2 * gbps * 1e9)
        best = _best_peer_seconds(results, workload, variant)
        if best is None:
            continue
        verdict = "fits" if floor <= 0.5 * best else "does not fit"
        lines.append(f"- {label}: {floor:.3f} s of codec work vs a target of "
                     f"{0.5 * best:.3f} s (0.5 x {best:.3f} s): {verdict}")
    return lines


def _busiest(results):
    """The highest 1-minute load average seen during the run."""
    la0, la1 = results.get("loadavg_start"), results.get("loadavg_end")
    return max((la0 or [0])[0], (la1 or [0])[0], results.get("loadavg_max") or 0)


def _is_busy(results):
    cpus = _int(results["machine"].get("cpus")) or os.cpu_count() or 1
    return _busiest(results) > 0.5 * cpus


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _argline(a):
    parts = [f"--n {a['n']}", f"--repeats {a['repeats']}"]
    if a.get("small_n") != 1000:
        parts.append(f"--small-n {a['small_n']}")
    if a.get("warmup") != 1:
        parts.append(f"--warmup {a['warmup']}")
    if list(a.get("libs", C.LIBS)) != list(C.LIBS):
        parts.append("--libs " + ",".join(a["libs"]))
    if a.get("read_from", "ref") != "ref":
        parts.append(f"--read-from {a['read_from']}")
    if list(a.get("workloads", C.WORKLOADS)) != list(C.WORKLOADS):
        parts.append("--workloads " + ",".join(a["workloads"]))
    if a.get("hogs", 1) != 1:
        parts.append(f"--hogs {a['hogs']}")
    if a.get("hog_session", "same") != "same":
        parts.append(f"--hog-session {a['hog_session']}")
    if a.get("suite"):
        parts.append("--suite")
    if a.get("baseline"):
        parts.append(f"--baseline {a['baseline']}")
    if a.get("cache", ["warm"]) != ["warm", "cold"]:
        parts.append(f"--cache {a.get('cache', ['warm'])[0]}")
    if a.get("cold_method", "auto") != "auto":
        parts.append(f"--cold-method {a['cold_method']}")
    return " ".join(parts)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    libs = _libs(results)
    colors = {"tensorstore": "#4c72b0", "zarr-python": "#dd8452",
              "zarr-python-fused": "#937860", "zarrs-python": "#55a868",
              C.ZARRCORE_PIPELINE: "#8172b3", "zarrcore": "#c44e52", C.BASELINE: "#e8a0a2"}
    # A third row for the cold-cache reads and the round trips, when the run measured them.
    extra = [wl for wl in ("read_all_cold", "roundtrip", "roundtrip_cold")
             if any(k.startswith(wl + "/") for k in results["timings"])]
    fig, axes = plt.subplots(3 if extra else 2, 3, figsize=(16, 14 if extra else 9.5),
                             squeeze=False)
    a = results["args"]
    fig.suptitle(f"zarrcore vs peers — N={a['n']} uint16 cube, best of {a['repeats']}, "
                 f"{results['date'][:10]}, {results['machine'].get('cpu_model', '')}\n"
                 "labels on zarrcore's bars: zarrcore time / best peer time (target ≤ 0.5×)"
                 + (f" — BUSY MACHINE (load {_busiest(results):.1f}): a smoke test"
                    if _is_busy(results) else ""),
                 fontsize=11)

    def bars(ax, groups, values, ylabel, title, log=False, ratios=None):
        x = np.arange(len(groups))
        width = 0.8 / max(1, len(libs))
        for i, lib in enumerate(libs):
            vals = [values.get((g, lib)) for g in groups]
            hs = [v if v is not None else 0 for v in vals]
            rects = ax.bar(x + (i - (len(libs) - 1) / 2) * width, hs, width, label=lib,
                           color=colors.get(lib))
            for g, rect, v in zip(groups, rects, vals):
                cx = rect.get_x() + rect.get_width() / 2
                if v is None:
                    ax.annotate("n/a", (cx, 0), ha="center", va="bottom", fontsize=7,
                                rotation=90)
                elif lib == "zarrcore" and ratios and ratios.get(g) is not None:
                    ax.annotate(f"{ratios[g]:.2f}×", (cx, v), ha="center", va="bottom",
                                fontsize=7, color=colors["zarrcore"])
        ax.set_xticks(x)
        ax.set_xticklabels(groups)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)

    def valid(r):
        return _ok(r)

    for ax, wl in zip(list(axes[0]) + list(axes[2] if extra else []),
                      ("read_all", "read_chunks", "write_all", *extra)):
        values, ratios = {}, {}
        for v in C.CUBE_VARIANTS:
            res = results["timings"].get(f"{wl}/{v}", {})
            ratios[v] = compare(res)[0] if res else None
            for lib in libs:
                if valid(res.get(lib)):
                    values[(v, lib)] = res[lib]["best"]
        bars(ax, list(C.CUBE_VARIANTS), values, "seconds (lower is better)",
             {**TITLES, **COLD_TITLES, **ROUNDTRIP_TITLES}[wl].split(" (s")[0]
             .replace(", shard by shard when sharded", ""),
             ratios=ratios)
    axes[0][0].legend(fontsize=8)

    values, ratios = {}, {}
    for wl in ("read_all", "write_all"):
        res = results["timings"].get(f"small/{wl}", {})
        g = wl.replace("_all", "")
        ratios[g] = compare(res)[0] if res else None
        for lib in libs:
            if valid(res.get(lib)):
                values[(g, lib)] = res[lib]["best"] * _per_chunk(res[lib])
    bars(axes[1][0], ["read", "write"], values, "µs per chunk (log)",
         "Small chunks: " + results["datasets"].get("small", ""), log=bool(values),
         ratios=ratios)
    axes[1][0].title.set_fontsize(8)

    ax = axes[1][1]
    tl = [lib for lib in libs if lib in results["threads"].get("1", {})]
    sp = [(_thread_speedup(results, lib)[0] or 0) for lib in tl]
    ax.bar(tl, sp, color=[colors.get(lib) for lib in tl])
    ax.axhline(THREADS_TARGET, color="k", ls="--", lw=1, label=f"target {THREADS_TARGET}×")
    ax.axhline(1.0, color="gray", ls=":", lw=1)
    ax.set_ylabel("speedup, 2 threads over 1")
    ax.set_title("Thread scaling: inner chunks of `sharded`, library pool at 1", fontsize=10)
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="y", alpha=0.3)

    values = {}
    for r in results["rss"]:
        if not r.get("error"):
            values[(r["variant"], r["lib"])] = (r["maxrss_peak"] - r["rss_before"]) / r["output_bytes"]
    variants = [v for v in C.CUBE_VARIANTS if any(k[0] == v for k in values)]
    bars(axes[1][2], variants, values, "(peak RSS − RSS before) / output",
         "Memory of a whole-array read")
    axes[1][2].axhline(RSS_TARGET, color="k", ls="--", lw=1)
    axes[1][2].axhline(1.0, color="gray", ls=":", lw=1)

    for ax in axes[2][len(extra):] if extra else []:
        ax.set_visible(False)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
