"""Codec registry: v3 names and v2 (numcodecs) ids to codec classes."""
from collections.abc import Callable
from typing import Protocol, TypeVar, cast, overload

from ..errors import MetadataError, UnknownCodecError
from .base import Codec, CodecJSON


class CodecFactory(Protocol):
    """What a v3 name is registered for: a Codec class, or an object that builds codecs."""

    def from_config(self, configuration: CodecJSON) -> Codec: ...


class V2CodecFactory(CodecFactory, Protocol):
    """A CodecFactory that also builds codecs from numcodecs' configuration (less "id")."""

    def from_v2_config(self, config: CodecJSON) -> Codec: ...


_F = TypeVar("_F", bound=CodecFactory)
_V2F = TypeVar("_V2F", bound=V2CodecFactory)

_V3: dict[str, CodecFactory] = {}
_V2: dict[str, V2CodecFactory] = {}


@overload
def register_codec(cls: _V2F, name: str | None = None, *, v2_id: str) -> _V2F: ...
@overload
def register_codec(cls: _F, name: str | None = None, v2_id: None = None) -> _F: ...
def register_codec(cls: CodecFactory, name: str | None = None,
                   v2_id: str | None = None) -> CodecFactory:
    """Register `cls` under its v3 `name` (default cls.name) and optionally a v2 id."""
    # `name` is a class attribute of Codec classes, which a protocol cannot state.
    name = name or getattr(cls, "name")

    if name:
        _V3[name] = cls
    if v2_id:
        # The overloads take a v2_id only with a V2CodecFactory.
        _V2[v2_id] = cast(V2CodecFactory, cls)
    return cls


def codec_from_json(spec: object, where: str = "codecs") -> Codec:
    """Build a codec from a v3 `{"name", "configuration"}` dict (or pass a Codec through)."""
    if isinstance(spec, Codec):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise MetadataError(f"{where}: codec entry {spec!r} is not a {{'name': ...}} object")
    name = spec["name"]
    cls = _V3.get(name)
    if cls is None:
        raise UnknownCodecError(f"{where}: unknown codec {name!r}")
    config = spec.get("configuration", {})
    if not isinstance(config, dict):
        raise MetadataError(f"{where}: configuration of codec {name!r} must be an object")
    return _build(cls.from_config, config, f"{where}: invalid configuration for codec {name!r}")


def codec_from_v2(config: object, where: str = "compressor") -> Codec:
    """Build a codec from a v2 numcodecs `{"id": ...}` dict."""
    if isinstance(config, Codec):
        return config
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise MetadataError(f"{where}: {config!r} is not a numcodecs {{'id': ...}} object")
    cls = _V2.get(config["id"])
    if cls is None:
        raise UnknownCodecError(f"{where}: unknown codec id {config['id']!r}")
    options = {k: v for k, v in config.items() if k != "id"}
    try:
        return _build(cls.from_v2_config, options,
                      f"{where}: invalid configuration for {config['id']!r}")
    except MetadataError as e:  # the codec's own message: put `where` in front
        if str(e).startswith(where):
            raise
        raise type(e)(f"{where}: {e}") from None


def _build(make: Callable[[CodecJSON], Codec], config: CodecJSON, what: str) -> Codec:
    """make(config); its TypeError or ValueError as a MetadataError that starts with `what`."""
    try:
        return make(config)
    except (TypeError, ValueError) as e:
        if isinstance(e, MetadataError):
            raise
        raise MetadataError(f"{what}: {e}") from e


def registered_names() -> list[str]:
    return sorted(_V3)
