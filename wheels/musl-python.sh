#!/bin/sh
# Run inside a Debian chroot with musl-tools (wheels/chroot.py --musl): build a CPython linked
# against musl's C library by Debian's musl-gcc, into PREFIX. musl-gcc sees musl's headers and
# libraries only, so zlib, bzip2 and xz (for zlib, bz2, lzma and pip's wheels) are built first,
# static and position-independent, into PREFIX/deps; no OpenSSL, libffi or sqlite is built, so
# the interpreter has no ssl, ctypes or sqlite3 (pip installs from a directory of wheels).
#   musl-python.sh PREFIX PYTHON_TREE ZLIB_TREE BZIP2_TREE XZ_TREE
set -eu
prefix=$1 python=$2 zlib=$3 bzip2=$4 xz=$5
deps=$prefix/deps
jobs=${CHROOT_JOBS:-2}
mkdir -p "$deps/bin" "$deps/include" "$deps/lib"
# The kernel's headers, which CPython includes, are shared with glibc's.
ln -sfn /usr/include/linux "$deps/include/linux"
ln -sfn /usr/include/asm-generic "$deps/include/asm-generic"
ln -sfn /usr/include/x86_64-linux-gnu/asm "$deps/include/asm"
# musl-gcc runs this machine's gcc, whose --print-multiarch names glibc's triplet; CPython's
# configure refuses that beside the musl triplet it finds (x86_64-linux-musl, the extension
# suffix of musllinux wheels), and takes that one when the compiler names none.
cat >"$deps/bin/musl-cc" <<'CC'
#!/bin/sh
[ "$1" = --print-multiarch ] && exit 0
exec musl-gcc "$@"
CC
chmod +x "$deps/bin/musl-cc"
export CC="$deps/bin/musl-cc" CFLAGS="-O2 -fPIC"

if [ ! -f "$deps/.built" ]; then
    (cd "$zlib" && ./configure --static --prefix="$deps" >/dev/null &&
        make -s -j"$jobs" libz.a && make -s install >/dev/null)
    (cd "$bzip2" && make -s -j"$jobs" libbz2.a CC="$CC" CFLAGS="$CFLAGS -D_FILE_OFFSET_BITS=64" &&
        cp libbz2.a "$deps/lib" && cp bzlib.h "$deps/include")
    (cd "$xz" && ./configure -q --prefix="$deps" --disable-shared --with-pic --disable-xz \
        --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links \
        --disable-scripts --disable-doc --disable-nls >/dev/null &&
        make -s -j"$jobs" >"$deps/xz.log" 2>&1 && make -s install >/dev/null)
    touch "$deps/.built"
fi

# (Kept between runs: a build that stopped goes on where it stopped.)
build=$prefix.build
mkdir -p "$build"
cd "$build"
# Debian's Makefile takes the configured link flags from LDFLAGS_NODIST.
"$python/configure" -q --prefix="$prefix" --with-ensurepip=no CPPFLAGS="-I$deps/include" \
    LDFLAGS="-L$deps/lib" LDFLAGS_NODIST="-L$deps/lib" >configure.log
nice make -s -j"$jobs" >make.log 2>&1 || { tail -40 make.log; exit 1; }
rm -rf "$prefix/bin" "$prefix/lib" "$prefix/include" "$prefix/share"
make -s altinstall >install.log 2>&1 || { tail -40 install.log; exit 1; }
