"""zarrcore's own DEFLATE decoder (csrc/codecs/zc_inflate.c) against Python's zlib: every valid
stream decodes alike, and hostile input ends in an error or in exactly zlib's output."""
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarrcore
from zarrcore._native import compress as c
from zarrcore.errors import ChunkDecodeError

STRATEGIES = [zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE,
              zlib.Z_FIXED]
ZLIB, GZIP, RAW = 15, 31, -15  # zlib's window bits of each container


def deflate(data, level=6, strategy=zlib.Z_DEFAULT_STRATEGY, wbits=ZLIB):
    co = zlib.compressobj(level, zlib.DEFLATED, wbits, 8, strategy)
    return co.compress(data) + co.flush()


def zlib_verdict(stream, size, gzip):
    """What zlib makes of `stream` decoded to exactly `size` bytes: bytes, or None."""
    d = zlib.decompressobj(GZIP if gzip else ZLIB)
    try:
        out = d.decompress(stream, size + 1)
        while gzip and d.eof and d.unused_data and len(out) <= size:
            rest, d = d.unused_data, zlib.decompressobj(GZIP)
            out += d.decompress(rest, size + 1 - len(out))
    except zlib.error:
        return None
    ok = d.eof and not d.unused_data and not d.unconsumed_tail and len(out) == size
    return out if ok else None


def decodes_like_zlib(stream, data, gzip):
    """Our decoder alone, and through zc_inflate, give `data`."""
    out = bytearray(len(data))
    assert c.deflate_decode(stream, out, gzip)
    assert out == data
    decompress = c.gzip_decompress if gzip else c.zlib_decompress
    assert decompress(stream, bytearray(len(data))) == data


def hostile_agrees_with_zlib(stream, size, gzip):
    """Our decoder refuses what zlib refuses and, when it takes a stream, gives zlib's bytes;
    zc_inflate raises ChunkDecodeError or gives zlib's bytes."""
    verdict = zlib_verdict(stream, size, gzip)
    out = bytearray(size)
    if c.deflate_decode(stream, out, gzip):
        assert verdict is not None and out == verdict
    decompress = c.gzip_decompress if gzip else c.zlib_decompress
    if verdict is None:
        with pytest.raises(ChunkDecodeError):
            decompress(stream, bytearray(size))
    else:
        assert decompress(stream, bytearray(size)) == verdict


def repeats(seed, n, max_dist):
    """Random bytes copied over and over from `1..max_dist` back: matches of every kind."""
    rng = np.random.default_rng(seed)
    out = bytearray(rng.integers(0, 256, min(n, 64), dtype=np.uint8).tobytes())
    while len(out) < n:
        dist = int(rng.integers(1, min(max_dist, len(out)) + 1))
        for _ in range(int(rng.integers(3, 300))):
            out.append(out[-dist])
        out.append(int(rng.integers(0, 256)))
    return bytes(out[:n])


def text_like(seed, n):
    rng = np.random.default_rng(seed)
    words = [b"the", b"chunk", b"zarr", b"array", b"of", b"float32", b"\n", b"reference"]
    return b" ".join(words[i] for i in rng.integers(0, len(words), n // 4 + 1))[:n]


def shuffled_floats(seed, n):
    """Smooth float32 values, byte-shuffled as HDF5's shuffle filter stores them."""
    x = np.linspace(seed, seed + 3, n // 4, dtype="f4") + np.float32(280)
    return x.view("u1").reshape(-1, 4).T.tobytes()


payloads = st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda b, k: b * k, st.binary(min_size=1, max_size=40), st.integers(1, 400)),
    st.builds(repeats, st.integers(0, 2**32), st.integers(0, 20000),
              st.sampled_from([1, 2, 3, 5, 7, 8, 15, 16, 17, 32, 300, 32768])),
    st.builds(text_like, st.integers(0, 2**32), st.integers(0, 20000)),
    st.builds(shuffled_floats, st.integers(0, 100), st.integers(0, 20000)),
)


@given(payloads, st.integers(0, 9), st.sampled_from(STRATEGIES), st.booleans())
def test_decodes_what_zlib_encodes(data, level, strategy, gzip):
    decodes_like_zlib(deflate(data, level, strategy, GZIP if gzip else ZLIB), data, gzip)


@pytest.mark.parametrize("data", [
    b"", b"x", bytes(5 << 20), repeats(1, 3 << 20, 32768), shuffled_floats(0, 4 << 20),
    np.random.default_rng(2).integers(0, 256, 2 << 20, dtype=np.uint8).tobytes(),
], ids=["empty", "one", "zeros", "repeats", "floats", "random"])
@pytest.mark.parametrize("level", [0, 1, 9])
def test_long_and_tiny_outputs(data, level):
    for gzip in (False, True):
        decodes_like_zlib(deflate(data, level, wbits=GZIP if gzip else ZLIB), data, gzip)


def gzip_member(data, flags=0, extra=b"", name=b"", comment=b""):
    """A gzip member with the optional header fields of `flags` (RFC 1952 2.3.1)."""
    head = bytearray(b"\x1f\x8b\x08" + bytes([flags]) + b"\x00\x00\x00\x00\x00\xff")
    if flags & 4:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        head += name + b"\x00"
    if flags & 16:
        head += comment + b"\x00"
    if flags & 2:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return bytes(head) + deflate(data, wbits=RAW) + trailer


@given(st.lists(st.tuples(payloads, st.sampled_from([0, 1, 2, 4, 8, 16, 30])), min_size=1,
                max_size=4))
def test_gzip_members_with_every_header_field(members):
    stream = b"".join(gzip_member(d, f, b"ex\x00tra", b"name.nc", b"a comment")
                      for d, f in members)
    decodes_like_zlib(stream, b"".join(d for d, _ in members), True)


def test_gzip_header_checksum_is_verified():
    member = bytearray(gzip_member(b"data" * 50, 2 | 8, name=b"n"))
    member[12] ^= 0xFF  # the header's CRC16, after "n\0"
    hostile_agrees_with_zlib(bytes(member), 200, True)


@pytest.mark.parametrize("gzip", [False, True])
def test_every_truncation(gzip):
    data = repeats(7, 3000, 300) + text_like(3, 2000)
    for level, strategy in ((0, 0), (6, 0), (9, zlib.Z_FIXED)):
        stream = deflate(data, level, strategy, GZIP if gzip else ZLIB)
        for end in range(len(stream)):
            hostile_agrees_with_zlib(stream[:end], len(data), gzip)
        hostile_agrees_with_zlib(stream + b"\x00", len(data), gzip)  # trailing garbage
        for size in (len(data) - 1, len(data) + 1):
            hostile_agrees_with_zlib(stream, size, gzip)


@given(payloads, st.integers(1, 9), st.sampled_from(STRATEGIES), st.booleans(),
       st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)), min_size=1,
                max_size=4))
def test_bit_flips(data, level, strategy, gzip, flips):
    stream = bytearray(deflate(data, level, strategy, GZIP if gzip else ZLIB))
    for where, bit in flips:
        stream[int(where * len(stream))] ^= 1 << bit
    hostile_agrees_with_zlib(bytes(stream), len(data), gzip)


# ---- hand-made dynamic blocks: incomplete and over-subscribed codes ----------------------

LENGTH_BASES = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67,
                83, 99, 115, 131, 163, 195, 227, 258]
LENGTH_EXTRA = [0] * 8 + [k for k in range(1, 6) for _ in range(4)] + [0]
DIST_BASES = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
              1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
DIST_EXTRA = [0, 0] + [k // 2 for k in range(28)]


class BitWriter:
    def __init__(self):
        self.value, self.nbits = 0, 0

    def bits(self, value, n):
        """`value` in n bits, least significant first (header fields, extra bits)."""
        self.value |= value << self.nbits
        self.nbits += n

    def code(self, code, n):
        """A Huffman code: most significant bit first."""
        self.bits(int(format(code, f"0{n}b")[::-1], 2), n)

    def bytes(self):
        return self.value.to_bytes((self.nbits + 7) // 8, "little")


def canonical(lens):
    """RFC 1951 3.2.2: symbol -> (code, length) of the lengths {symbol: length}."""
    codes, code = {}, 0
    for n in range(1, 16):
        for sym in sorted(s for s, ln in lens.items() if ln == n):
            codes[sym] = (code, n)
            code += 1
        code <<= 1
    return codes


def base_code(bases, extras, value):
    """(symbol, extra bits' value, extra bits) coding a length or distance (RFC 1951 3.2.5)."""
    i = max(k for k, b in enumerate(bases) if b <= value)
    return i, value - bases[i], extras[i]


def dynamic_block(lit_lens, dist_lens, items):
    """One final dynamic block of the given code lengths, coding `items` (a byte, or a
    (length, distance) pair, or "bad-distance": a distance code no length was given)."""
    nlit = max(max(lit_lens) + 1, 257)
    ndist = max(max(dist_lens, default=0) + 1, 1)
    lens = [lit_lens.get(s, 0) for s in range(nlit)] + [dist_lens.get(s, 0)
                                                         for s in range(ndist)]
    clen_lens = {s: 4 for s in range(15)} | {15: 5, 18: 5}  # a complete code-length code
    order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
    w = BitWriter()
    w.bits(1, 1)
    w.bits(2, 2)
    w.bits(nlit - 257, 5)
    w.bits(ndist - 1, 5)
    w.bits(19 - 4, 4)
    for s in order:
        w.bits(clen_lens.get(s, 0), 3)
    ccodes = canonical(clen_lens)
    i = 0
    while i < len(lens):
        run = 1
        while i + run < len(lens) and lens[i + run] == 0 == lens[i] and run < 138:
            run += 1
        if run >= 11:
            w.code(*ccodes[18])
            w.bits(run - 11, 7)
            i += run
        else:
            w.code(*ccodes[lens[i]])
            i += 1
    lcodes, dcodes = canonical(lit_lens), canonical(dist_lens)
    for item in items:
        if isinstance(item, int):
            w.code(*lcodes[item])
        elif item == "bad-distance":
            w.code(*lcodes[257])
            w.code(1, 1)  # the unused half of a lone 1-bit distance code
        else:
            sym, extra_value, extra = base_code(LENGTH_BASES, LENGTH_EXTRA, item[0])
            w.code(*lcodes[257 + sym])
            w.bits(extra_value, extra)
            sym, extra_value, extra = base_code(DIST_BASES, DIST_EXTRA, item[1])
            w.code(*dcodes[sym])
            w.bits(extra_value, extra)
    w.code(*lcodes[256])
    return w.bytes()


def zlib_wrap(raw, data):
    return b"\x78\x9c" + raw + struct.pack(">I", zlib.adler32(data))


def test_lone_distance_code_is_taken_as_zlib_does():
    # 'a' (1 bit), end of block and length 3 (2 bits each): complete; one distance code of
    # 1 bit: incomplete, which zlib allows.
    lits = {97: 1, 256: 2, 257: 2}
    stream = zlib_wrap(dynamic_block(lits, {0: 1}, [97, 97, (3, 1)]), b"aaaaa")
    assert zlib.decompress(stream) == b"aaaaa"
    decodes_like_zlib(stream, b"aaaaa", False)
    bad = zlib_wrap(dynamic_block(lits, {0: 1}, [97, "bad-distance"]), b"aaaa")
    hostile_agrees_with_zlib(bad, 4, False)


@pytest.mark.parametrize("lits,dists", [
    ({97: 1, 256: 1, 257: 1}, {0: 1}),          # over-subscribed literal/length code
    ({97: 2, 256: 2, 257: 2}, {0: 1}),          # incomplete literal/length code
    ({97: 1, 256: 2, 257: 2}, {0: 1, 1: 1, 2: 1}),  # over-subscribed distance code
    ({97: 1, 256: 2, 257: 2}, {0: 2, 1: 2}),    # incomplete distance code of 2 bits
])
def test_bad_codes_are_refused(lits, dists):
    data = b"aaaaa"
    stream = zlib_wrap(dynamic_block(lits, dists, [97, 97]), data[:2])
    hostile_agrees_with_zlib(stream, 2, False)
    assert zlib_verdict(stream, 2, False) is None


def test_distance_before_the_start_is_refused():
    stream = zlib_wrap(dynamic_block({97: 1, 256: 2, 257: 2}, {0: 1, 1: 1}, [97, (3, 2)]),
                       b"aaaa")
    hostile_agrees_with_zlib(stream, 4, False)
    assert zlib_verdict(stream, 4, False) is None


# ---- through an array's read path ---------------------------------------------------------

@pytest.mark.parametrize("compressor", [{"id": "zlib", "level": 4}, {"id": "gzip", "level": 4}])
def test_corrupt_chunks_name_their_key(compressor):
    data = np.linspace(270, 300, 4 * 512, dtype="f4").reshape(4, 512)
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, shape=data.shape, chunks=(2, 512), dtype="f4",
                              zarr_format=2, filters=[{"id": "shuffle", "elementsize": 4}],
                              compressors=compressor)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    stored = bytes(store.get("1.0"))
    gzip = compressor["id"] == "gzip"
    rng = np.random.default_rng(5)
    variants = [stored[:end] for end in range(0, len(stored), 7)]
    for _ in range(60):
        flipped = bytearray(stored)
        flipped[int(rng.integers(len(flipped)))] ^= 1 << int(rng.integers(8))
        variants.append(bytes(flipped))
    for blob in variants:
        store.set("1.0", blob)
        verdict = zlib_verdict(blob, data[2:].nbytes, gzip)
        if verdict is None:
            with pytest.raises(ChunkDecodeError, match=r"1\.0"):
                a[...]
        else:
            expected = np.frombuffer(verdict, "u1").reshape(4, -1).T.copy().view("f4")
            np.testing.assert_array_equal(a[2:], expected.reshape(2, 512))
