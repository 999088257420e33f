# Type stub of a compiled module (zarrcore/_native/http.pyx): a request sent and the first
# bytes of its answer received in one call. Keep in step with the .pyx.
from typing_extensions import Buffer

def ask(sock: int, request: Buffer, answer: Buffer) -> int: ...
