"""An incremental Server-Sent Events decoder, as streaming chat APIs use it.

Synchronous and push-based (bytes in, events out), so the caller owns the only async loop and
nothing is left for a finaliser to close when a stream stops early.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["SSEDecoder"]

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """Incremental Server-Sent Events decoder: bytes in, ``(event type, data)`` pairs out.

    Lines end at CRLF, LF or CR only (``str.splitlines``, and so ``aiter_lines``, would also
    split on U+2028 and others that may stand inside a JSON string). Comments and the
    ``id``/``retry`` fields are ignored; multi-line ``data`` is joined with newlines.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``."""
        self._buffer += self._decoder.decode(chunk)
        if not self._started and self._buffer:
            self._buffer = self._buffer.removeprefix("\ufeff")
            self._started = True
        events: list[tuple[str, str]] = []
        pos = 0
        for match in _LINE_END.finditer(self._buffer):
            if match.group() == "\r" and match.end() == len(self._buffer):
                break  # maybe the first half of a CRLF split across chunks
            self._line(self._buffer[pos : match.start()], events)
            pos = match.end()
        self._buffer = self._buffer[pos:]
        return events

    def close(self) -> list[tuple[str, str]]:
        """Events left when the body ends, including one missing its closing blank line."""
        events: list[tuple[str, str]] = []
        rest = (self._buffer + self._decoder.decode(b"", final=True)).removesuffix("\r")
        if rest:
            for line in _LINE_END.split(rest):
                self._line(line, events)
        self._line("", events)
        self._buffer = ""
        return events

    def _line(self, line: str, events: list[tuple[str, str]]) -> None:
        if not line:
            if self._data:
                events.append((self._event or "message", "\n".join(self._data)))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            return  # comment or keep-alive
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
