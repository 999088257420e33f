"""The keyed hash a decoded-chunk cache compares stored bytes by (csrc/cache/zc_siphash.h): SipHash-1-3
of a short input, else a tree of eight SipHash-1-3 lanes, each under the key with its lane's
number mixed in, whose digests, the length and the bytes after the last whole stripe are
hashed once more under the key. Checked against a Python model of it, built on a Python
SipHash that is itself checked against the algorithm's published vector and CPython's own
SipHash-1-3, through the CPU's vector lanes and through the plain C ones."""
import os
import random
import struct
import subprocess
import sys

import pytest

from zarrcore._native.cache import _content_hash_under

M64 = (1 << 64) - 1
TREE_MIN = 512  # shorter inputs take one SipHash (csrc/cache/zc_siphash.c)
LANES = 8
STRIPE = 8 * LANES
PATHS = pytest.mark.parametrize("portable", [False, True], ids=["vector", "plain-c"])


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def siphash(k0, k1, data, c=1, d=3):
    """SipHash-c-d of the bytes `data` under the key (k0, k1), words little-endian."""
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def sip_round():
        v[0] = (v[0] + v[1]) & M64
        v[1] = _rotl(v[1], 13) ^ v[0]
        v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64
        v[3] = _rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M64
        v[3] = _rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M64
        v[1] = _rotl(v[1], 17) ^ v[2]
        v[2] = _rotl(v[2], 32)

    whole = len(data) // 8
    words = list(struct.unpack(f"<{whole}Q", data[:8 * whole]))
    words.append(int.from_bytes(data[8 * whole:], "little") | (len(data) & 0xff) << 56)
    for m in words:
        v[3] ^= m
        for _ in range(c):
            sip_round()
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(d):
        sip_round()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def tree(k0, k1, data):
    """The model of zc_siphash_tree, as zc_siphash.h states it."""
    if len(data) < TREE_MIN:
        return siphash(k0, k1, data)
    stripes = len(data) // STRIPE
    digests = [siphash(k0, k1 ^ (lane + 1),
                       b"".join(data[STRIPE * j + 8 * lane:STRIPE * j + 8 * lane + 8]
                                for j in range(stripes)))
               for lane in range(LANES)]
    return siphash(k0, k1, struct.pack(f"<{LANES + 1}Q", *digests, len(data))
                   + data[STRIPE * stripes:])


def test_the_model_gives_the_published_siphash_2_4_vector():
    """The paper's vector (Aumasson and Bernstein, appendix A): key 00..0f, input 00..0e."""
    k0, k1 = struct.unpack("<2Q", bytes(range(16)))
    assert siphash(k0, k1, bytes(range(15)), 2, 4) == 0xa129ca6149be45e5


@pytest.mark.skipif(sys.hash_info.algorithm != "siphash13",
                    reason="CPython hashes bytes by SipHash-1-3 only where built so")
def test_the_model_gives_cpythons_siphash_1_3():
    """With PYTHONHASHSEED=0 CPython hashes bytes by SipHash-1-3 under the key 0 (its hash,
    a signed word, is -2 where that would be -1, and 0 for no bytes)."""
    rng = random.Random(3)
    inputs = [rng.randbytes(n) for n in (1, 7, 8, 9, 15, 16, 63, 64, 255, 256, 1000)]
    script = ("import sys; print(*[hash(bytes.fromhex(h)) & (2**64 - 1) "
              "for h in sys.argv[1:]])")
    out = subprocess.run([sys.executable, "-c", script, *(b.hex() for b in inputs)],
                         env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True,
                         text=True, check=True).stdout.split()
    assert [int(h) for h in out] == [siphash(0, 0, b) for b in inputs]


@PATHS
def test_the_hash_is_the_models_for_every_length_to_1000_and_some_long_ones(portable):
    rng = random.Random(1)
    data = rng.randbytes(200_003)
    for _ in range(2):
        k0, k1 = rng.getrandbits(64), rng.getrandbits(64)
        for n in [*range(1001), 4095, 4096, 4097, 65_543, 77_824, 200_003]:
            assert _content_hash_under(k0, k1, data[:n], portable) == tree(k0, k1, data[:n]), n


@PATHS
def test_the_hash_reads_unaligned_bytes_alike(portable):
    rng = random.Random(2)
    k0, k1 = rng.getrandbits(64), rng.getrandbits(64)
    buf = memoryview(rng.randbytes(4200))
    for offset in range(9):
        for n in (511, 512, 700, 4191):
            assert _content_hash_under(k0, k1, buf[offset:offset + n], portable) == \
                tree(k0, k1, bytes(buf[offset:offset + n])), (offset, n)


@PATHS
def test_every_byte_and_the_key_change_the_hash(portable):
    """Any one byte flipped, in any lane or the bytes after the last whole stripe, gives a new
    hash, as do either half of the key and each length of the same bytes."""
    rng = random.Random(4)
    k0, k1 = rng.getrandbits(64), rng.getrandbits(64)
    data = bytearray(rng.randbytes(777))
    hashes = {_content_hash_under(k0, k1, data, portable)}
    for i in range(len(data)):
        data[i] ^= 0x10
        hashes.add(_content_hash_under(k0, k1, data, portable))
        data[i] ^= 0x10
    hashes |= {_content_hash_under(k0 ^ 1, k1, data, portable),
               _content_hash_under(k0, k1 ^ 1, data, portable)}
    hashes |= {_content_hash_under(k0, k1, data[:n], portable) for n in range(len(data))}
    assert len(hashes) == 1 + len(data) + 2 + len(data)


def test_the_two_paths_agree_on_long_inputs():
    rng = random.Random(5)
    for n in (1 << 20, (1 << 20) + 37):
        data = rng.randbytes(n)
        k0, k1 = rng.getrandbits(64), rng.getrandbits(64)
        assert _content_hash_under(k0, k1, data) == _content_hash_under(k0, k1, data, True)
