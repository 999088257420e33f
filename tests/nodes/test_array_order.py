"""The memory order of what reads return, as zarr-python 3.1 decides it: a v3 array's
config order (create_array(config=...), with_config), a v2 array's stored order."""
import warnings

import numpy as np
import pytest

import zarrcore

zarr = pytest.importorskip("zarr")


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _layout(x):
    if np.ndim(x) < 2:
        return "any"
    return "F" if x.flags.f_contiguous and not x.flags.c_contiguous else "C" if x.flags.c_contiguous else "none"


def _reads(a):
    """Every way to read, each result's memory order and values."""
    return {
        "full": a[:], "slice": a[1:3, 1:5], "step": a[::2, ::3], "ellipsis": a[...],
        "basic": a.get_basic_selection((slice(None), slice(2, 6))),
        "oindex": a.oindex[[0, 2, 3], [1, 4]], "orthogonal": a.get_orthogonal_selection(([3, 0], slice(None))),
        "mixed": a[[0, 3], 1:4], "mask": a[np.arange(24).reshape(4, 6) % 3 == 0],
        "blocks": a.blocks[0:2, 1], "vindex": a.vindex[[0, 1], [1, 2]],
        "asarray": np.asarray(a), "row": a[1],
    }


CREATES = {
    "v3_default": dict(zarr_format=3),
    "v3_config_F": dict(zarr_format=3, config={"order": "F"}),
    "v3_config_C": dict(zarr_format=3, config={"order": "C"}),
    "v2_order_F": dict(zarr_format=2, order="F"),
    "v2_order_F_config_C": dict(zarr_format=2, order="F", config={"order": "C"}),
    "v2_config_F": dict(zarr_format=2, config={"order": "F"}),
}


@pytest.mark.parametrize("case", sorted(CREATES))
def test_reads_return_zarr_pythons_memory_order(case):
    kwargs = dict(shape=(4, 6), chunks=(2, 4), dtype="i4", fill_value=0, **CREATES[case])
    values = np.arange(24, dtype="i4").reshape(4, 6)
    theirs = _quiet(lambda: zarr.create_array({}, **kwargs))
    ours = zarrcore.create_array({}, **kwargs)
    theirs[:] = values
    ours[:] = values
    assert ours.order == theirs.order
    assert ours.config["order"] == theirs.config.order
    for handle_ours, handle_theirs in [(ours, theirs)] + [
            (ours.with_config({"order": o}), theirs.with_config({"order": o})) for o in "CF"]:
        assert handle_ours.order == handle_theirs.order
        got, want = _reads(handle_ours), _quiet(lambda: _reads(handle_theirs))
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
            assert _layout(got[name]) == _layout(want[name]), (name, handle_ours.order)


def test_v2_F_order_stored_as_zarr_python_stores_it(tmp_path):
    """zarr-python reads zarrcore's F-order v2 chunks and the other way round, F-ordered."""
    values = np.arange(30, dtype="f8").reshape(5, 6)
    ours = zarrcore.create_array(tmp_path / "ours", shape=(5, 6), chunks=(2, 4), dtype="f8",
                                 zarr_format=2, order="F", compressors=None)
    ours[:] = values
    theirs = _quiet(lambda: zarr.create_array(tmp_path / "theirs", shape=(5, 6), chunks=(2, 4), dtype="f8",
                                              zarr_format=2, order="F", compressors=None))
    theirs[:] = values
    for key in ("0.0", "2.1"):
        assert (tmp_path / "ours" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes()
    back = zarrcore.open_array(tmp_path / "theirs")[:]
    assert back.flags.f_contiguous and not back.flags.c_contiguous
    np.testing.assert_array_equal(back, values)


def test_config_objects_and_bad_orders():
    a = zarrcore.create_array({}, shape=(2, 2), dtype="u1")
    config = _quiet(lambda: zarr.create_array({}, shape=(1,), dtype="u1", config={"order": "F"})).config
    assert a.with_config(config).order == "F"  # zarr-python's ArrayConfig object
    assert a.with_config({"write_empty_chunks": True}).order == "C"
    with pytest.raises(ValueError, match="order"):
        a.with_config({"order": "K"})
    with pytest.raises(ValueError, match="order"):
        zarrcore.create_array({}, shape=(2,), dtype="u1", config={"order": "A"})


def test_order_argument_warns_for_v3_as_zarr_python():
    with pytest.warns(RuntimeWarning, match="no effect"):
        a = zarrcore.create_array({}, shape=(2, 2), dtype="u1", order="F")
    assert a.order == "C" and a[:].flags.c_contiguous


def test_out_is_filled_as_given():
    a = zarrcore.create_array({}, shape=(3, 4), dtype="i2", config={"order": "F"})
    a[:] = np.arange(12).reshape(3, 4)
    out = np.zeros((3, 4), dtype="i2")
    assert a.get_basic_selection(..., out=out) is out
    np.testing.assert_array_equal(out, np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("case", sorted(CREATES))
def test_global_array_order_as_zarr_python(case, tmp_path):
    """config.set({"array.order": "F"}) as zarr-python 3.1 takes it: v3 arrays created or
    opened meanwhile without an order of their own read F-ordered, arrays opened before keep
    their order, new v2 arrays store it unless given `order`, and opened v2 arrays follow their
    stored order."""
    kwargs = dict(shape=(4, 6), chunks=(2, 4), dtype="i4", fill_value=0, **CREATES[case])
    values = np.arange(24, dtype="i4").reshape(4, 6)
    paths = {"ours": tmp_path / "ours", "theirs": tmp_path / "theirs"}
    assert zarrcore.config.get("array.order") == zarr.config.get("array.order") == "C"
    before = {"ours": zarrcore.create_array({}, shape=(2, 2), dtype="u1"),
              "theirs": _quiet(lambda: zarr.create_array({}, shape=(2, 2), dtype="u1"))}
    with zarrcore.config.set({"array.order": "F"}), zarr.config.set({"array.order": "F"}):
        assert zarrcore.config.get("array.order") == zarrcore.config.array_order == "F"
        ours = zarrcore.create_array(paths["ours"], **kwargs)
        theirs = _quiet(lambda: zarr.create_array(paths["theirs"], **kwargs))
        ours[:], theirs[:] = values, values
        handles = [(ours, theirs), (zarrcore.open_array(paths["ours"]),
                                    _quiet(lambda: zarr.open_array(paths["theirs"])))]
        assert before["ours"].order == before["theirs"].order == "C"
        assert before["ours"][:].flags.c_contiguous
    handles.append((zarrcore.open_array(paths["ours"]), _quiet(lambda: zarr.open_array(paths["theirs"]))))
    if CREATES[case]["zarr_format"] == 2:
        assert ours.metadata.order == theirs.metadata.order
    for handle_ours, handle_theirs in handles:
        assert handle_ours.order == handle_theirs.order
        assert handle_ours.config["order"] == handle_theirs.config.order
        got, want = _reads(handle_ours), _quiet(lambda: _reads(handle_theirs))
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
            assert _layout(got[name]) == _layout(want[name]), (name, case)
    v3 = CREATES[case]["zarr_format"] == 3
    assert [h.order for h, _ in handles] == ["C" if case == "v3_config_C" else "F", "F",
                                             "C" if v3 else "F"]


def test_global_array_order_for_zarr_2_style_creation_and_groups():
    with zarrcore.config.set({"array.order": "F"}), zarr.config.set({"array.order": "F"}):
        ours = [zarrcore.create(shape=(3, 4), dtype="i4", zarr_format=2),
                zarrcore.open_group({}, mode="w", zarr_format=2).create_array("x", shape=(3,), dtype="i4")]
        theirs = _quiet(lambda: [
            zarr.create(shape=(3, 4), dtype="i4", zarr_format=2),
            zarr.open_group({}, mode="w", zarr_format=2).create_array("x", shape=(3,), dtype="i4")])
    assert [a.metadata.order for a in ours] == [a.metadata.order for a in theirs] == ["F", "F"]
    with pytest.raises(ValueError, match="array_order"):
        zarrcore.config.set({"array.order": "K"})
    assert zarrcore.config.array_order == "C"
