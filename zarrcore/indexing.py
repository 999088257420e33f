"""Basic (numpy-style int/slice/Ellipsis/newaxis) selections projected onto the chunk grid."""
import itertools
import numbers
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ChunkProjection:
    """One chunk's share of a selection.

    `chunk_selection` indexes the decoded chunk, `out_selection` the result array;
    `complete` says the selection covers every in-bounds element of the chunk.
    """

    coords: tuple
    chunk_selection: tuple
    out_selection: tuple
    complete: bool


def _dim_int(index, dim_len, axis):
    i = int(index)
    if i < -dim_len or i >= dim_len:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {dim_len}")
    return i + dim_len if i < 0 else i


def _int_pieces(i, chunk_len, dim_len):
    c = i // chunk_len
    extent = min(chunk_len, dim_len - c * chunk_len)
    return [(c, i - c * chunk_len, None, extent == 1)]


def _slice_pieces(sl, chunk_len, dim_len):
    """Pieces (chunk, chunk slice, out slice, complete) of a slice along one axis."""
    start, stop, step = sl.indices(dim_len)
    n = len(range(start, stop, step))
    if n == 0:
        return [], 0
    if step < 0:
        # Walk the same elements ascending; the output positions run backwards.
        start, step = start + (n - 1) * step, -step
        reverse = True
    else:
        reverse = False
    last = start + (n - 1) * step
    pieces = []
    c = start // chunk_len
    last_chunk = last // chunk_len
    while c <= last_chunk:
        lo = c * chunk_len
        hi = min(lo + chunk_len, dim_len)
        j0 = max(0, -(-(lo - start) // step))
        j1 = min(n, -(-(hi - start) // step))
        if j0 < j1:
            first = start + j0 * step - lo
            chunk_sel = slice(first, start + (j1 - 1) * step - lo + 1, step)
            if reverse:
                out_sel = slice(n - 1 - j0, (n - 1 - j1) if j1 < n else None, -1)
            else:
                out_sel = slice(j0, j1)
            # Distinct in-chunk elements: covering them all means the count matches.
            pieces.append((c, chunk_sel, out_sel, j1 - j0 == hi - lo))
            c += 1
        else:
            # Large steps skip whole chunks: jump to the chunk of the next element.
            c = (start + j1 * step) // chunk_len if j1 < n else last_chunk + 1
    return pieces, n


def expand_selection(selection, ndim):
    """Normalize to a tuple of ints, slices and None (newaxis), Ellipsis expanded."""
    if not isinstance(selection, tuple):
        selection = (selection,)
    n_ellipsis = sum(1 for s in selection if s is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for s in selection if s is not None and s is not Ellipsis)
    if n_real > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed"
        )
    out = []
    for s in selection:
        if s is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(s)
    if n_ellipsis == 0:
        out.extend([slice(None)] * (ndim - n_real))
    return tuple(out)


def is_basic_selection(selection):
    items = selection if isinstance(selection, tuple) else (selection,)
    for s in items:
        if s is None or s is Ellipsis or isinstance(s, slice):
            continue
        if isinstance(s, (numbers.Integral, np.integer)) and not isinstance(s, (bool, np.bool_)):
            continue
        return False
    return True


class BasicIndexer:
    """Project a basic selection onto a regular chunk grid.

    `shape` is the result shape (newaxis included); `projections()` yields ChunkProjection.
    """

    def __init__(self, selection, shape, chunk_shape):
        items = expand_selection(selection, len(shape))
        self.dim_pieces = []
        result_shape = []
        drop_shape = []
        axis = 0
        for item in items:
            if item is None:
                result_shape.append(1)
                continue
            dim_len, chunk_len = shape[axis], chunk_shape[axis]
            if isinstance(item, slice):
                pieces, n = _slice_pieces(item, chunk_len, dim_len)
                result_shape.append(n)
                drop_shape.append(n)
            elif isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, bool):
                pieces = _int_pieces(_dim_int(item, dim_len, axis), chunk_len, dim_len)
            else:
                raise IndexError(
                    f"unsupported index {item!r} for basic selection; "
                    "use .oindex or .vindex for arrays"
                )
            self.dim_pieces.append(pieces)
            axis += 1
        self.shape = tuple(result_shape)
        # Shape of the result before newaxis dims are inserted.
        self.drop_shape = tuple(drop_shape)

    @property
    def nitems(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def projections(self):
        for combo in itertools.product(*self.dim_pieces):
            coords = tuple(p[0] for p in combo)
            chunk_sel = tuple(p[1] for p in combo)
            out_sel = tuple(p[2] for p in combo if p[2] is not None)
            yield ChunkProjection(coords, chunk_sel, out_sel, all(p[3] for p in combo))
