"""numcodecs' zarr3 codec classes for zarr-python (where this zarr-python keeps them), and the
warnings their use raises."""
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
        import zarr.codecs.numcodecs as nc  # zarr-python >= 3.1.3
    except ImportError:
        import numcodecs.zarr3 as nc

# zarr-python warns that these codecs are outside the v3 spec, numcodecs.zarr3 that it moved.
IGNORE_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

__all__ = ["nc", "IGNORE_WARNINGS"]
