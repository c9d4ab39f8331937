"""The one error tree of claw_memory.

Misuse (bad input) and operational failures (a backend that cannot be reached, a store that
cannot be read) are separate branches, so callers can retry the second kind and fix the first::

    ClawMemoryError
    ├── MemoryException                 memory-layer errors
    │   ├── InvalidInputError           misuse: the call was rejected before anything was written
    │   │   ├── InvalidNamespaceError   (also ValueError)
    │   │   ├── InvalidKeyError         (also ValueError)
    │   │   │   └── KeyTypeError        a key that is not a str (also TypeError)
    │   │   ├── InvalidValueError       not JSON-compatible (also TypeError and ValueError)
    │   │   ├── InvalidTTLError         (also ValueError)
    │   │   └── InvalidQueryError       a search query or limit of the wrong type (also TypeError)
    │   ├── DriverUnavailableError      backend unreachable or timed out
    │   ├── CorruptStoreError           stored data that cannot be read (names the namespace)
    │   └── RegistryError               unknown driver name, or a registration that is not a Memory
    ├── GuardBlockedError               a guard refused a message (.reason, .guard)
    └── ModelError                      the model call failed

Backend exceptions (redis, SQLAlchemy, ``OSError``) are translated at the driver boundary and
chained with ``raise ... from exc``. No message carries a password, a credentialed URL or a
stored value.
"""

from __future__ import annotations

__all__ = [
    "ClawMemoryError",
    "CorruptStoreError",
    "DriverUnavailableError",
    "GuardBlockedError",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidNamespaceError",
    "InvalidQueryError",
    "InvalidTTLError",
    "InvalidValueError",
    "KeyTypeError",
    "MemoryException",
    "ModelError",
    "RegistryError",
]


class ClawMemoryError(Exception):
    """Root of every error raised by claw_memory."""


class MemoryException(ClawMemoryError):
    """An error of the memory layer (drivers, wrappers, registry)."""


class InvalidInputError(MemoryException):
    """A call was rejected because of its arguments; nothing was written."""


class InvalidNamespaceError(InvalidInputError, ValueError):
    """The namespace breaks one of the namespace rules; the message names the rule."""


class InvalidKeyError(InvalidInputError, ValueError):
    """The key is empty, longer than 255 characters, or contains a NUL byte."""


class KeyTypeError(InvalidKeyError, TypeError):
    """The key is not a ``str``."""


class InvalidValueError(InvalidInputError, TypeError, ValueError):
    """The value is not JSON-compatible (or, for a special namespace, not the expected shape)."""


class InvalidTTLError(InvalidInputError, ValueError):
    """The TTL is negative, NaN, infinite, a bool, or not a number."""


class InvalidQueryError(InvalidInputError, TypeError):
    """A search query that is not a ``str``, or a limit that is not an ``int``."""


class DriverUnavailableError(MemoryException):
    """The backend could not be reached or did not answer in time.

    The message names the driver and, where useful, the host, never a password or a full URL.
    """

    def __init__(self, message: str, *, driver: str | None = None) -> None:
        super().__init__(message)
        self.driver = driver


class CorruptStoreError(MemoryException):
    """Stored data could not be read back. ``namespace`` names the namespace affected."""

    def __init__(self, message: str, *, namespace: str | None = None) -> None:
        super().__init__(message)
        self.namespace = namespace


class RegistryError(MemoryException):
    """A driver name is unknown, or a registration does not produce a ``Memory``."""


class GuardBlockedError(ClawMemoryError):
    """A guard refused a message before it reached the model. Nothing was stored."""

    def __init__(self, reason: str, guard: str) -> None:
        super().__init__(f"blocked by guard {guard!r}: {reason}")
        self.reason = reason
        self.guard = guard


class ModelError(ClawMemoryError):
    """The model call failed (connection, HTTP status, malformed reply, cut stream).

    ``status`` holds the HTTP status when there was one. Never carries the API key.
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
