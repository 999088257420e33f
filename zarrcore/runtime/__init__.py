"""The runtime floor: bounded concurrency and the portable stand-ins for POSIX-only calls.
The settings (zarrcore/config.py) and the errors (zarrcore/errors.py) share this floor."""
