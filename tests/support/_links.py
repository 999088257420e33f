"""Links (runtime.link.Link) that have timed what a test says, so that reads are planned as
over a slow link without one."""
from zarrcore.runtime.link import Link

_TRANSFER = 4 << 20


def link_of(round_trip, rate, body_rate=None):
    """A Link that has seen requests of `round_trip` seconds and transfers at `rate` bytes a
    second, and a body at `body_rate` where given."""
    link = Link()
    link.observe(round_trip, 100)
    for _ in range(40):
        link.observe(round_trip + _TRANSFER / rate, _TRANSFER)
    if body_rate is not None:
        link.observe_body(1.0, int(body_rate))
    return link
