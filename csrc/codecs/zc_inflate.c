/* DEFLATE decoding (RFC 1951) straight into the caller's buffer of the exact decoded size.
 *
 * Bits are taken least significant first from a 64-bit buffer. Huffman codes are looked up
 * in tables indexed by the next ROOT bits (bit-reversed codes, since the stream stores them
 * most significant bit first), with subtables for longer codes. Each table entry holds:
 *   bits 0-3   bits the code takes (of a subtable entry: bits past the root ones),
 *   bits 4-7   kind: E_LIT literal, E_SUB subtable pointer, E_EOB end of block, E_BAD invalid,
 *              none of them: a length or distance,
 *   bits 8-15  extra bits after the code (of a subtable pointer: its index bits),
 *   bits 16-31 literal byte, length or distance base, or the subtable's offset.
 * The decoder is strict and never tries to mimic zlib's diagnostics: zc_inflate runs zlib
 * on whatever this refuses, so only successes have to agree with zlib exactly. */
#include "codecs/zc_inflate.h"

#include <string.h>

#include "codecs/zc_checksums.h"
#include "zc_status.h"
#include "codecs/zc_zlib.h"

#define E_LIT 0x10u
#define E_SUB 0x20u
#define E_EOB 0x40u
#define E_BAD 0x80u

#define LIT_ROOT 10
#define DIST_ROOT 8
#define CLEN_ROOT 7
/* Root table plus room for subtables: zlib's `enough` bounds for 286 codes of at most 15
 * bits with a 10-bit root (1334) and 30 codes with an 8-bit root (400), rounded up; the
 * builder checks the room anyway. */
#define LIT_TABLE 1400
#define DIST_TABLE 420
#define MAX_CODE_BITS 15

/* Fast-loop margins: one iteration refills twice (7 bytes each, 8-byte loads) and copies a
 * 258-byte match in 16-byte steps. */
#define FAST_IN 16
#define FAST_OUT 288
/* Bytes of zeros the reader may pretend lie past the input, so that it can always refill;
 * whatever it actually consumes of them is caught when it aligns to a byte. */
#define MAX_OVERREAD 8

#define BITMASK(n) (((uint64_t)1 << (n)) - 1)

typedef struct {
    const uint8_t *in, *in_end;
    uint64_t bits;   /* unconsumed bits, low first; above nbits: zeros or copies of *in */
    unsigned nbits;
    unsigned overread;
} bitreader;

static inline uint64_t load64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* At least 8 readable bytes at in: top the buffer up to 56..63 bits with one load (the
 * partial byte on top is loaded again, identically, next time). */
#define REFILL_FAST()                                  \
    do {                                               \
        bits |= load64le(in) << nbits;                 \
        in += (63 - nbits) >> 3;                       \
        nbits |= 56;                                   \
    } while (0)

/* Top up to 56..63 bits byte by byte, with zeros past the end (at most MAX_OVERREAD). */
static int refill_slow(bitreader *r)
{
    while (r->nbits < 56) {
        if (r->in < r->in_end)
            r->bits |= (uint64_t)*r->in++ << r->nbits;
        else if (++r->overread > MAX_OVERREAD)
            return 0;
        r->nbits += 8;
    }
    return 1;
}

static unsigned take(bitreader *r, unsigned n) /* n <= 32, after refill_slow */
{
    unsigned v = (unsigned)(r->bits & BITMASK(n));
    r->bits >>= n;
    r->nbits -= n;
    return v;
}

/* Drop the bits up to the next byte boundary and hand the whole bytes left in the buffer
 * back to the input; 0 when the stream consumed bytes past the end of the input. */
static int align_to_byte(bitreader *r)
{
    unsigned back = (r->nbits & ~7u) >> 3;
    if (back < r->overread)
        return 0;
    r->in -= back - r->overread;
    r->overread = 0;
    r->bits = 0;
    r->nbits = 0;
    return 1;
}

static const uint16_t length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,
                                         15, 17, 19, 23, 27, 31, 35, 43, 51,  59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,
                                       17,   25,   33,   49,   65,   97,    129,   193,
                                       257,  385,  513,  769,  1025, 1537,  2049,  3073,
                                       4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

enum { KIND_CLEN, KIND_LIT, KIND_DIST };

/* The entry (without its code length) that decodes to `sym` in a table of `kind`. */
static uint32_t symbol_entry(int kind, unsigned sym)
{
    if (kind == KIND_CLEN)
        return (uint32_t)sym << 16;
    if (kind == KIND_LIT) {
        if (sym < 256)
            return E_LIT | (uint32_t)sym << 16;
        if (sym == 256)
            return E_EOB;
        if (sym > 285)
            return E_BAD;
        return (uint32_t)length_base[sym - 257] << 16 | (uint32_t)length_extra[sym - 257] << 8;
    }
    if (sym > 29)
        return E_BAD;
    return (uint32_t)dist_base[sym] << 16 | (uint32_t)dist_extra[sym] << 8;
}

/* The low len (<= 16) bits of code in reverse order. */
static unsigned reverse_bits(unsigned code, unsigned len)
{
    code = (code & 0x5555) << 1 | (code >> 1 & 0x5555);
    code = (code & 0x3333) << 2 | (code >> 2 & 0x3333);
    code = (code & 0x0f0f) << 4 | (code >> 4 & 0x0f0f);
    code = (code & 0x00ff) << 8 | (code >> 8 & 0x00ff);
    return code >> (16 - len);
}

/* Build the decode table of the canonical code with lengths lens[0, n) (RFC 1951 3.2.2).
 * Over-subscribed codes fail; incomplete ones too, except a lone 1-bit code (which zlib
 * also takes: its other code is invalid), and an empty one (every code invalid). */
static int build_table(uint32_t *table, unsigned cap, unsigned root, int kind,
                       const uint8_t *lens, unsigned n)
{
    unsigned count[MAX_CODE_BITS + 1] = {0}, offs[MAX_CODE_BITS + 2];
    uint16_t sorted[288];
    for (unsigned s = 0; s < n; s++)
        count[lens[s]]++;
    count[0] = 0;
    unsigned max = MAX_CODE_BITS;
    while (max > 0 && count[max] == 0)
        max--;
    int left = 1;
    for (unsigned len = 1; len <= MAX_CODE_BITS; len++) {
        left = 2 * left - (int)count[len];
        if (left < 0)
            return 0;
    }
    if (left > 0) { /* empty or a lone 1-bit code: every slot not filled below is invalid */
        if (kind == KIND_CLEN || max > 1)
            return 0;
        for (unsigned i = 0; i < (1u << root); i++)
            table[i] = E_BAD | 1;
        if (max == 0)
            return 1;
    }
    offs[1] = 0;
    for (unsigned len = 1; len <= MAX_CODE_BITS; len++)
        offs[len + 1] = offs[len] + count[len];
    for (unsigned s = 0; s < n; s++)
        if (lens[s])
            sorted[offs[lens[s]]++] = (uint16_t)s;

    unsigned next_free = 1u << root, code = 0, i = 0, sub_prefix = ~0u, sub_off = 0, sub_bits = 0;
    for (unsigned len = 1; len <= max; len++, code <<= 1) {
        for (unsigned k = 0; k < count[len]; k++, i++, code++) {
            uint32_t e = symbol_entry(kind, sorted[i]);
            unsigned rev = reverse_bits(code, len);
            if (len <= root) {
                for (unsigned j = rev; j < (1u << root); j += 1u << len)
                    table[j] = e | len;
                continue;
            }
            unsigned prefix = rev & ((1u << root) - 1);
            if (prefix != sub_prefix) {
                /* The codes sharing this root prefix follow in canonical order: the subtable
                 * needs as many bits as the longest of them has past the root. */
                unsigned l = len, room = 1u << (len - root), rest = count[len] - k;
                while (room > rest && l < max) {
                    room = (room - rest) << 1;
                    l++;
                    rest = count[l];
                }
                sub_bits = l - root;
                sub_off = next_free;
                next_free += 1u << sub_bits;
                if (next_free > cap)
                    return 0;
                sub_prefix = prefix;
                table[prefix] = E_SUB | (uint32_t)sub_off << 16 | sub_bits << 8 | root;
            }
            for (unsigned j = rev >> root; j < (1u << sub_bits); j += 1u << (len - root))
                table[sub_off + j] = e | (len - root);
        }
    }
    return 1;
}

typedef struct {
    uint32_t lit[LIT_TABLE];
    uint32_t dist[DIST_TABLE];
} tables;

static int build_fixed(tables *t)
{
    uint8_t lens[288 + 32];
    memset(lens, 8, 144);
    memset(lens + 144, 9, 112);
    memset(lens + 256, 7, 24);
    memset(lens + 280, 8, 8);
    memset(lens + 288, 5, 32);
    return build_table(t->lit, LIT_TABLE, LIT_ROOT, KIND_LIT, lens, 288) &&
           build_table(t->dist, DIST_TABLE, DIST_ROOT, KIND_DIST, lens + 288, 32);
}

/* The code lengths of a dynamic block (RFC 1951 3.2.7) and its tables. */
static int build_dynamic(bitreader *r, tables *t)
{
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
                                      11, 4,  12, 3, 13, 2, 14, 1, 15};
    uint8_t lens[286 + 30], clens[19] = {0};
    uint32_t ctable[1 << CLEN_ROOT];
    if (!refill_slow(r))
        return 0;
    unsigned nlit = take(r, 5) + 257, ndist = take(r, 5) + 1, nclen = take(r, 4) + 4;
    if (nlit > 286 || ndist > 30)
        return 0;
    for (unsigned i = 0; i < nclen; i++) {
        if (!refill_slow(r))
            return 0;
        clens[order[i]] = (uint8_t)take(r, 3);
    }
    if (!build_table(ctable, 1 << CLEN_ROOT, CLEN_ROOT, KIND_CLEN, clens, 19))
        return 0;
    for (unsigned i = 0; i < nlit + ndist;) {
        if (!refill_slow(r))
            return 0;
        uint32_t e = ctable[r->bits & BITMASK(CLEN_ROOT)];
        if (e & E_BAD)
            return 0;
        take(r, e & 15);
        unsigned sym = e >> 16, rep, value = 0;
        if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
        }
        if (sym == 16) {
            if (i == 0)
                return 0;
            value = lens[i - 1];
            rep = 3 + take(r, 2);
        } else if (sym == 17) {
            rep = 3 + take(r, 3);
        } else {
            rep = 11 + take(r, 7);
        }
        if (rep > nlit + ndist - i)
            return 0;
        memset(lens + i, (int)value, rep);
        i += rep;
    }
    if (lens[256] == 0)
        return 0;
    return build_table(t->lit, LIT_TABLE, LIT_ROOT, KIND_LIT, lens, nlit) &&
           build_table(t->dist, DIST_TABLE, DIST_ROOT, KIND_DIST, lens + nlit, ndist);
}

static inline void copy8(uint8_t *d, const uint8_t *s) { memcpy(d, s, 8); }
static inline void copy16(uint8_t *d, const uint8_t *s) { memcpy(d, s, 16); }

/* Copy a match of len <= 258 bytes from dist back, writing up to 15 bytes past its end
 * (the caller leaves FAST_OUT bytes of room). */
static inline uint8_t *copy_match_fast(uint8_t *out, unsigned dist, unsigned len)
{
    const uint8_t *src = out - dist;
    uint8_t *end = out + len;
    if (dist >= 16) {
        do {
            copy16(out, src);
            out += 16;
            src += 16;
        } while (out < end);
    } else if (dist >= 8) {
        do {
            copy8(out, src);
            out += 8;
            src += 8;
        } while (out < end);
    } else if (dist == 1) {
        uint64_t v = 0x0101010101010101ull * src[0];
        do {
            memcpy(out, &v, 8);
            out += 8;
        } while (out < end);
    } else {
        /* The first 8 bytes one by one; past them the data repeats with period dist, so it
         * also repeats every multiple of dist, and one of 8..14 lies within the match. */
        static const uint8_t period[8] = {0, 0, 8, 9, 8, 10, 12, 14};
        for (int k = 0; k < 8; k++)
            out[k] = src[k];
        const uint8_t *from = out + 8 - period[dist];
        out += 8;
        while (out < end) {
            copy8(out, from);
            out += 8;
            from += 8;
        }
    }
    return end;
}

#define LOOKUP(e, table, root)                                                 \
    do {                                                                       \
        e = table[bits & BITMASK(root)];                                       \
        if (e & E_SUB) {                                                       \
            bits >>= root;                                                     \
            nbits -= root;                                                     \
            e = table[(e >> 16) + (bits & BITMASK((e >> 8) & 0xff))];          \
        }                                                                      \
    } while (0)

#define CONSUME(n)           \
    do {                     \
        bits >>= (n);        \
        nbits -= (n);        \
    } while (0)

/* Past a non-literal entry e: the end of the block (ok) or an invalid code (goto done), or
 * a length and the distance code after it into len and off. */
#define DECODE_MATCH()                                                      \
    do {                                                                    \
        if (e & (E_EOB | E_BAD)) {                                          \
            ok = !(e & E_BAD);                                              \
            CONSUME(e & 15);                                                \
            goto done;                                                      \
        }                                                                   \
        CONSUME(e & 15);                                                    \
        len = (e >> 16) + (unsigned)(bits & BITMASK((e >> 8) & 0xff));      \
        CONSUME((e >> 8) & 0xff);                                           \
        LOOKUP(d, dist, DIST_ROOT);                                         \
        if (d & E_BAD)                                                      \
            goto done;                                                      \
        CONSUME(d & 15);                                                    \
        off = (d >> 16) + (unsigned)(bits & BITMASK((d >> 8) & 0xff));      \
        CONSUME((d >> 8) & 0xff);                                           \
    } while (0)

/* Decode one Huffman-coded block's symbols into out[.., out_end); `window` is where the
 * member's output starts (distances may not reach before it). */
static int decode_block(bitreader *r, const tables *t, uint8_t *window, uint8_t **outp,
                        uint8_t *out_end)
{
    const uint32_t *lit = t->lit, *dist = t->dist;
    const uint8_t *in = r->in, *in_end = r->in_end;
    uint64_t bits = r->bits;
    unsigned nbits = r->nbits;
    uint8_t *out = *outp;
    uint32_t e, d;
    unsigned len, off;
    int ok = 0;

    for (;;) {
        /* Fast loop: enough input for two refills and room for a whole match. */
        while (in_end - in >= FAST_IN && out_end - out >= FAST_OUT) {
            REFILL_FAST();
            LOOKUP(e, lit, LIT_ROOT);
            if (e & E_LIT) {
                CONSUME(e & 15);
                *out++ = (uint8_t)(e >> 16);
                LOOKUP(e, lit, LIT_ROOT);
                if (e & E_LIT) {
                    CONSUME(e & 15);
                    *out++ = (uint8_t)(e >> 16);
                    LOOKUP(e, lit, LIT_ROOT);
                    if (e & E_LIT) {
                        CONSUME(e & 15);
                        *out++ = (uint8_t)(e >> 16);
                        continue;
                    }
                }
                REFILL_FAST();
            }
            DECODE_MATCH();
            if (off > (size_t)(out - window))
                goto done;
            out = copy_match_fast(out, off, len);
        }
        /* One symbol near the ends of input or output, with every bound checked. */
        r->in = in;
        r->bits = bits;
        r->nbits = nbits;
        if (!refill_slow(r))
            goto done_slow;
        in = r->in;
        bits = r->bits;
        nbits = r->nbits;
        LOOKUP(e, lit, LIT_ROOT);
        if (e & E_LIT) {
            if (out == out_end)
                goto done;
            CONSUME(e & 15);
            *out++ = (uint8_t)(e >> 16);
            continue;
        }
        DECODE_MATCH();
        if (off > (size_t)(out - window) || len > (size_t)(out_end - out))
            goto done;
        for (unsigned k = 0; k < len; k++)
            out[k] = out[(ptrdiff_t)k - (ptrdiff_t)off];
        out += len;
    }
done:
    r->in = in;
    r->bits = bits;
    r->nbits = nbits;
done_slow:
    *outp = out;
    return ok;
}

/* The blocks of one DEFLATE stream from r's position; `*outp` advances over its output. */
static int inflate_stream(bitreader *r, tables *t, uint8_t **outp, uint8_t *out_end)
{
    uint8_t *window = *outp;
    unsigned final;
    do {
        if (!refill_slow(r))
            return 0;
        final = take(r, 1);
        unsigned type = take(r, 2);
        if (type == 0) {
            if (!align_to_byte(r) || r->in_end - r->in < 4)
                return 0;
            const uint8_t *p = r->in;
            unsigned len = p[0] | (unsigned)p[1] << 8, nlen = p[2] | (unsigned)p[3] << 8;
            r->in += 4;
            if (len != (~nlen & 0xffff) || len > (size_t)(r->in_end - r->in) ||
                len > (size_t)(out_end - *outp))
                return 0;
            memcpy(*outp, r->in, len);
            *outp += len;
            r->in += len;
            continue;
        }
        if (type == 3 || !(type == 1 ? build_fixed(t) : build_dynamic(r, t)))
            return 0;
        if (!decode_block(r, t, window, outp, out_end))
            return 0;
    } while (!final);
    return align_to_byte(r);
}

static uint32_t get32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t get32le(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static int decode_zlib(bitreader *r, tables *t, uint8_t *dst, uint8_t *dst_end)
{
    if (r->in_end - r->in < 2)
        return 0;
    unsigned cmf = r->in[0], flg = r->in[1];
    /* deflate, a window of at most 32 KiB, the header check, no preset dictionary */
    if ((cmf & 15) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20))
        return 0;
    r->in += 2;
    uint8_t *out = dst;
    if (!inflate_stream(r, t, &out, dst_end) || out != dst_end || r->in_end - r->in != 4)
        return 0;
    return get32be(r->in) == zc_adler32(1, dst, (size_t)(out - dst));
}

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t crc = 0;
    zc_checksum32(ZC_CHECKSUM_CRC32, 0, NULL, 0, p, n, &crc);
    return crc;
}

/* Skip a zero-terminated header field; 0 when the input ends first. */
static int skip_string(bitreader *r)
{
    const uint8_t *z = memchr(r->in, 0, (size_t)(r->in_end - r->in));
    if (z == NULL)
        return 0;
    r->in = z + 1;
    return 1;
}

static int decode_gzip(bitreader *r, tables *t, uint8_t *dst, uint8_t *dst_end)
{
    uint8_t *out = dst;
    do { /* one member (RFC 1952 2.3) */
        const uint8_t *head = r->in;
        if (r->in_end - r->in < 10)
            return 0;
        unsigned flg = head[3];
        if (head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 || (flg & 0xe0))
            return 0;
        r->in += 10;
        if (flg & 4) { /* FEXTRA */
            if (r->in_end - r->in < 2)
                return 0;
            size_t xlen = r->in[0] | (size_t)r->in[1] << 8;
            r->in += 2;
            if (xlen > (size_t)(r->in_end - r->in))
                return 0;
            r->in += xlen;
        }
        if ((flg & 8) && !skip_string(r)) /* FNAME */
            return 0;
        if ((flg & 16) && !skip_string(r)) /* FCOMMENT */
            return 0;
        if (flg & 2) { /* FHCRC */
            if (r->in_end - r->in < 2)
                return 0;
            uint32_t crc = crc32_of(head, (size_t)(r->in - head));
            if ((r->in[0] | (unsigned)r->in[1] << 8) != (crc & 0xffff))
                return 0;
            r->in += 2;
        }
        uint8_t *start = out;
        if (!inflate_stream(r, t, &out, dst_end) || r->in_end - r->in < 8)
            return 0;
        size_t n = (size_t)(out - start);
        if (get32le(r->in) != crc32_of(start, n) || get32le(r->in + 4) != (uint32_t)n)
            return 0;
        r->in += 8;
    } while (r->in != r->in_end);
    return out == dst_end;
}

int zc_deflate_decode(const void *src, size_t srclen, void *dst, size_t dstlen, int format)
{
    uint8_t none;
    if (src == NULL || (dst == NULL && dstlen))
        return ZC_ERR_PARAM;
    tables t;
    bitreader r = {(const uint8_t *)src, (const uint8_t *)src + srclen, 0, 0, 0};
    uint8_t *out = dst ? (uint8_t *)dst : &none;
    int ok;
    if (format == ZC_ZLIB_FORMAT_ZLIB)
        ok = decode_zlib(&r, &t, out, out + dstlen);
    else if (format == ZC_ZLIB_FORMAT_GZIP)
        ok = decode_gzip(&r, &t, out, out + dstlen);
    else
        return ZC_ERR_PARAM;
    return ok ? ZC_OK : ZC_ERR_CORRUPT;
}
