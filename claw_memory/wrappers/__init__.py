"""Wrappers take drivers and are drivers: they stack in any order."""

from claw_memory.wrappers.privacy import PrivacyAwareMemory
from claw_memory.wrappers.router import RouterMemory

__all__ = ["PrivacyAwareMemory", "RouterMemory"]
