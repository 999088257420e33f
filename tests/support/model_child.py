"""What the model checker's second process does (tests/face/test_api_model.py): it opens the
array afresh and writes, as another process of another program would."""
import zarrcore


def write_region(address, selection, value):
    """`a[selection] = value` in this process, on the array at `address` (path or URL, and
    its storage options)."""
    url, options = address
    zarrcore.open_array(url, mode="r+", storage_options=options)[selection] = value
