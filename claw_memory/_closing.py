"""``AsyncClosing``: ``async with`` for every object of the package that has ``aclose()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing"]


class AsyncClosing:
    """Makes ``async with obj:`` call ``await obj.aclose()`` on exit, whatever happened."""

    __slots__ = ()

    async def aclose(self) -> None:
        """Release what the object owns. Calling it twice is harmless."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
