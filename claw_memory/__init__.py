"""claw_memory: asyncio-native memory for LLM applications.

One contract (:class:`Memory`, :class:`SearchableMemory`) kept exactly by every driver:
:class:`ArrayMemory` (in process), :class:`FileMemory` (files), :class:`RedisMemory` (Redis and
Redis Cluster) and :class:`SqlMemory` (SQLite, PostgreSQL, MariaDB). Wrappers compose them:
:class:`RouterMemory` routes namespaces, :class:`PrivacyAwareMemory` drops writes when message
storage is off. Redis and SQLAlchemy are imported only when their drivers are used.

The engine (:class:`Claw`) runs recall, guards, the model and conversation persistence for
``send`` and ``stream``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claw_memory import hooks
from claw_memory.contracts import (
    InspectableMemory,
    Memory,
    MemoryEntry,
    MemoryHit,
    SearchableMemory,
)
from claw_memory.drivers.array import ArrayMemory
from claw_memory.drivers.base import BaseMemory
from claw_memory.engine import (
    Agent,
    Claw,
    ClawBuilder,
    Conversation,
    Message,
    Response,
    ResponseStream,
    Turn,
    TurnStream,
)
from claw_memory.errors import (
    ClawMemoryError,
    CorruptStoreError,
    DriverUnavailableError,
    GuardBlockedError,
    InvalidInputError,
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidQueryError,
    InvalidTTLError,
    InvalidValueError,
    KeyTypeError,
    MemoryException,
    ModelError,
    RegistryError,
)
from claw_memory.guards import Guard, GuardSet, default_guards
from claw_memory.hooks import Hooks
from claw_memory.models import ChatMessage, EchoModel, Model, OpenAICompatibleModel
from claw_memory.registry import MemoryCatalogue, MemoryRegistry
from claw_memory.scoring import KeywordIndex, TokenOverlapScorer
from claw_memory.validation import NamespaceValidator
from claw_memory.wrappers.privacy import PrivacyAwareMemory
from claw_memory.wrappers.router import RouterMemory

if TYPE_CHECKING:
    from claw_memory.drivers.file import FileMemory
    from claw_memory.drivers.redis import RedisMemory
    from claw_memory.drivers.sql import SqlMemory

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "ArrayMemory",
    "BaseMemory",
    "ChatMessage",
    "Claw",
    "ClawBuilder",
    "ClawMemoryError",
    "Conversation",
    "CorruptStoreError",
    "DriverUnavailableError",
    "EchoModel",
    "FileMemory",
    "Guard",
    "GuardBlockedError",
    "GuardSet",
    "Hooks",
    "InspectableMemory",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidNamespaceError",
    "InvalidQueryError",
    "InvalidTTLError",
    "InvalidValueError",
    "KeyTypeError",
    "KeywordIndex",
    "Memory",
    "MemoryCatalogue",
    "MemoryEntry",
    "MemoryException",
    "MemoryHit",
    "MemoryRegistry",
    "Message",
    "Model",
    "ModelError",
    "NamespaceValidator",
    "OpenAICompatibleModel",
    "PrivacyAwareMemory",
    "RedisMemory",
    "RegistryError",
    "Response",
    "ResponseStream",
    "RouterMemory",
    "SearchableMemory",
    "SqlMemory",
    "TokenOverlapScorer",
    "Turn",
    "TurnStream",
    "__version__",
    "default_guards",
    "hooks",
]

def __getattr__(name: str) -> Any:
    # Drivers with optional backends load on first use, so `import claw_memory` stays light.
    from claw_memory import drivers

    if name not in drivers.LAZY_DRIVERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(drivers, name)
    globals()[name] = value
    return value
