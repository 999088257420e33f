"""Codec registry: v3 names and v2 (numcodecs) ids to codec classes, and the JSON form of
other libraries' codec objects."""

import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast, overload

from ..errors import MetadataError, UnknownCodecError, UnknownCodecObjectError
from .base import Codec, CodecJSON

__all__ = [
    "ACCEPTED",
    "CodecFactory",
    "V2CodecFactory",
    "codec_from_json",
    "codec_from_v2",
    "foreign_codec_json",
    "register_codec",
    "registered_names",
]


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
def register_codec(
    cls: CodecFactory, name: str | None = None, v2_id: str | None = None
) -> CodecFactory:
    """Register `cls` under its v3 `name` (default cls.name) and optionally a v2 id."""
    # `name` is a class attribute of Codec classes, which a protocol cannot state.
    name = name or getattr(cls, "name")

    if name:
        _V3[name] = cls
    if v2_id:
        # The overloads take a v2_id only with a V2CodecFactory.
        _V2[v2_id] = cast(V2CodecFactory, cls)
    return cls


# What a codec may be given as, for the error that names them.
ACCEPTED = (
    "a zarrcore codec (zarrcore.codecs.*), a zarr-python codec (zarr.codecs.*, "
    "zarr.codecs.numcodecs.*), a numcodecs codec, or its JSON form: "
    "{'name': ..., 'configuration': {...}} (format 2 also numcodecs' {'id': ...})"
)


def _plain_json(value: object) -> Any:
    """`value` as plain JSON values (tuples as lists, str enums as str, numpy scalars as
    Python numbers)."""

    def scalar(x: object) -> Any:
        item = getattr(x, "item", None)
        if callable(item):
            return item()
        raise TypeError(f"{x!r} is not JSON")

    return json.loads(json.dumps(value, default=scalar))


def foreign_codec_json(obj: object, where: str = "codecs") -> CodecJSON:
    """The v3 JSON of another library's codec object: zarr-python's (`to_dict()`, without the
    settings it leaves to the data type, as its `evolve_from_array_spec` fills them) or
    numcodecs' (`get_config()`, as zarr.codecs.numcodecs names it: `numcodecs.<id>`);
    UnknownCodecObjectError naming what to pass for anything else."""
    to_dict, get_config = getattr(obj, "to_dict", None), getattr(obj, "get_config", None)
    try:
        if callable(to_dict):
            spec = dict(to_dict())
            config = dict(spec.get("configuration") or {})
            for name in getattr(obj, "_tunable_attrs", ()):  # blosc's typesize and shuffle
                config.pop(name, None)
            for name in ("codecs", "index_codecs"):  # sharding's inner codecs, with theirs
                if name in config:
                    config[name] = [foreign_codec_json(c, where) for c in getattr(obj, name)]
            if config or "configuration" in spec:
                spec["configuration"] = config
            return cast(CodecJSON, _plain_json(spec))
        if callable(get_config) and isinstance(getattr(obj, "codec_id", None), str):
            config = dict(get_config())
            codec_id = config.pop("id", obj.codec_id)  # type: ignore[attr-defined]
            return cast(
                CodecJSON, _plain_json({"name": f"numcodecs.{codec_id}", "configuration": config})
            )
    except (TypeError, ValueError, AttributeError) as e:
        raise UnknownCodecObjectError(
            f"{where}: cannot take the JSON form of codec {obj!r}: {e}"
        ) from None
    raise UnknownCodecObjectError(
        f"{where}: {obj!r} is not a codec zarrcore knows: pass {ACCEPTED}"
    )


def codec_from_json(spec: object, where: str = "codecs") -> Codec:
    """Build a codec from a v3 `{"name", "configuration"}` dict, or from another library's
    codec object (`foreign_codec_json`); a Codec passes through."""
    if isinstance(spec, Codec):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    elif not isinstance(spec, dict):
        spec = foreign_codec_json(spec, where)
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise MetadataError(f"{where}: codec entry {spec!r} is not a {{'name': ...}} object")
    name = spec["name"]
    cls = _V3.get(name)
    if cls is None:
        raise UnknownCodecError(f"{where}: unknown codec {name!r}")
    config = spec.get("configuration", {})
    if not isinstance(config, dict):
        raise MetadataError(f"{where}: configuration of codec {name!r} must be an object")
    return _build(
        cls.from_config, config, f"{where}: invalid configuration for codec {name!r}", cls
    )


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
        return _build(
            cls.from_v2_config, options, f"{where}: invalid configuration for {config['id']!r}"
        )
    except MetadataError as e:  # the codec's own message: put `where` in front
        if str(e).startswith(where):
            raise
        raise type(e)(f"{where}: {e}") from None


def _fields(factory: CodecFactory) -> list[str] | None:
    """The configuration fields a codec class takes (its keyword arguments), None when that
    cannot be told."""
    import inspect  # (an error's path only: 13-18 ms to import)

    try:
        parameters = inspect.signature(factory).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _build(
    make: Callable[[CodecJSON], Codec],
    config: CodecJSON,
    what: str,
    factory: CodecFactory | None = None,
) -> Codec:
    """make(config); its TypeError or ValueError as a MetadataError that starts with `what`
    (and lists the configuration fields `factory` takes, when given: only then, as reading
    a signature costs more than building most codecs)."""
    try:
        return make(config)
    except (TypeError, ValueError) as e:
        if isinstance(e, MetadataError):
            raise
        fields = _fields(factory) if factory is not None and isinstance(e, TypeError) else None
        takes = f"; it takes {fields}" if fields is not None else ""
        raise MetadataError(f"{what}: {e}{takes}") from e


def registered_names() -> list[str]:
    return sorted(_V3)
