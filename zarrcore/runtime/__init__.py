"""The runtime floor: bounded concurrency, byte-range coalescing and the portable stand-ins
for POSIX-only calls. The settings (zarrcore/runtime/config.py) and the errors (zarrcore/errors.py)
share this floor."""

# (Its modules are its public names: none is gathered here.)
__all__: list[str] = []
