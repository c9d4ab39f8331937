"""Validation shared by every driver: namespaces, keys, values and TTLs.

Each check raises the matching error from :mod:`claw_memory.errors` before anything is written.
The checks sit on every hot path, so the common cases (a namespace seen before, a ``str`` value)
return after one or two C-level operations.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from claw_memory.errors import (
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidQueryError,
    InvalidTTLError,
    InvalidValueError,
    KeyTypeError,
)

__all__ = [
    "MAX_KEY_LENGTH",
    "MAX_NAMESPACE_LENGTH",
    "NamespaceValidator",
    "encode_json",
    "normalize_ttl",
    "validate_key",
    "validate_search",
    "validate_value",
]

MAX_NAMESPACE_LENGTH: Final = 100
MAX_KEY_LENGTH: Final = 255

_NAMESPACE_CHARS = re.compile(r"[A-Za-z0-9_.:\-]+")
# Validated namespaces are remembered so the hot path is one set lookup. Bounded so a caller
# that generates namespaces freely cannot grow it without limit.
_KNOWN_NAMESPACES: set[str] = set()
_KNOWN_NAMESPACES_MAX: Final = 4096


class NamespaceValidator:
    """Applies the namespace rules of the memory contract, in their documented order.

    A namespace is rejected, with :class:`InvalidNamespaceError` naming the rule, when it is
    1. empty, 2. longer than 100 characters, 3. contains a NUL byte, 4. contains ``..``,
    5. contains ``/`` or ``\\``, 6. contains any character outside ``a-z A-Z 0-9 _ - . :``.
    Custom drivers call :meth:`validate` to keep the same rules.
    """

    @staticmethod
    def validate(namespace: object) -> str:
        """Return ``namespace`` unchanged if valid, else raise :class:`InvalidNamespaceError`."""
        if namespace.__class__ is str and namespace in _KNOWN_NAMESPACES:
            return namespace
        return _validate_slow(namespace)


def _validate_slow(namespace: object) -> str:
    if not isinstance(namespace, str):
        raise InvalidNamespaceError(
            f"namespace must be a str, not {type(namespace).__name__}"
        )
    if not namespace:
        raise InvalidNamespaceError("namespace must not be empty")
    if len(namespace) > MAX_NAMESPACE_LENGTH:
        raise InvalidNamespaceError(
            f"namespace must be at most {MAX_NAMESPACE_LENGTH} characters, got {len(namespace)}"
        )
    if "\x00" in namespace:
        raise InvalidNamespaceError("namespace must not contain a NUL byte")
    if ".." in namespace:
        raise InvalidNamespaceError("namespace must not contain '..'")
    if "/" in namespace or "\\" in namespace:
        raise InvalidNamespaceError("namespace must not contain '/' or '\\'")
    if _NAMESPACE_CHARS.fullmatch(namespace) is None:
        raise InvalidNamespaceError(
            "namespace may only contain the characters a-z A-Z 0-9 _ - . :"
        )
    if namespace.__class__ is str:
        if len(_KNOWN_NAMESPACES) >= _KNOWN_NAMESPACES_MAX:
            _KNOWN_NAMESPACES.clear()
        _KNOWN_NAMESPACES.add(namespace)
    return str(namespace)


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid key, else raise :class:`InvalidKeyError`.

    A key is a non-empty ``str`` of at most 255 characters with no NUL byte; every other
    character (``:``, ``/``, spaces, emoji) is allowed and keys are case-sensitive.
    """
    if type(key) is str and 0 < len(key) <= MAX_KEY_LENGTH and "\x00" not in key:
        return key
    if not isinstance(key, str):
        raise KeyTypeError(f"key must be a str, not {type(key).__name__}")
    if not key:
        raise InvalidKeyError("key must not be empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"key must be at most {MAX_KEY_LENGTH} characters, got {len(key)}")
    if "\x00" in key:
        raise InvalidKeyError("key must not contain a NUL byte")
    return str(key)


_SCALARS: Final = (str, int, type(None), bool)


def validate_value(value: Any) -> None:
    """Raise :class:`InvalidValueError` unless ``value`` is JSON-compatible.

    JSON-compatible means ``None``, ``bool``, ``int``, finite ``float``, ``str``, and ``list``,
    ``tuple`` or ``dict`` (with ``str`` keys) of those, nested. The message gives the path to
    the offending part and its type, never the value itself.
    """
    cls = value.__class__
    if cls is str or cls is int or cls is bool or value is None:
        return
    try:
        _check(value, "$")
    except RecursionError:
        raise InvalidValueError("value is nested too deeply (or contains itself)") from None


def _check(value: Any, path: str) -> None:
    if isinstance(value, _SCALARS):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValueError(
                f"value at {path} is a non-finite float; JSON has no NaN or infinity"
            )
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidValueError(
                    f"value at {path} has a {type(k).__name__} key; JSON objects need str keys"
                )
            _check(v, f"{path}.{k}" if len(path) < 200 else path)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check(v, f"{path}[{i}]" if len(path) < 200 else path)
        return
    raise InvalidValueError(
        f"value at {path} is a {type(value).__name__}, which is not JSON-compatible"
    )


_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(value: Any) -> str:
    """Validate ``value`` and return its compact JSON text (the form every driver stores)."""
    validate_value(value)
    try:
        return _encoder.encode(value)
    except (ValueError, TypeError) as exc:  # a circular reference the walk did not reach
        raise InvalidValueError(f"value cannot be encoded as JSON: {type(exc).__name__}") from None


def normalize_ttl(ttl: object, default: float | None) -> float | None:
    """Return the effective TTL in seconds, ``None`` meaning never expires.

    ``None`` takes the driver's ``default``; ``0`` never expires; a positive ``int`` or
    ``float`` expires after that many seconds. Negative, NaN, infinite, ``bool`` or non-numeric
    TTLs raise :class:`InvalidTTLError`.
    """
    if ttl is None:
        return default
    if ttl.__class__ is bool or not isinstance(ttl, (int, float)):
        raise InvalidTTLError(
            f"ttl must be an int or float number of seconds, not {type(ttl).__name__}"
        )
    if isinstance(ttl, float) and not math.isfinite(ttl):
        raise InvalidTTLError("ttl must be finite")
    if ttl < 0:
        raise InvalidTTLError("ttl must not be negative")
    if ttl == 0:
        return None
    return float(ttl) if isinstance(ttl, float) else ttl


def validate_search(query: object, limit: object) -> None:
    """Raise :class:`InvalidQueryError` unless ``query`` is a ``str`` and ``limit`` an ``int``."""
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a str, not {type(query).__name__}")
    if limit.__class__ is bool or not isinstance(limit, int):
        raise InvalidQueryError(f"limit must be an int, not {type(limit).__name__}")
