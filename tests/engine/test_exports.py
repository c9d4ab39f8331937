"""The public surface of ``claw_memory.engine``."""

from __future__ import annotations

import claw_memory.engine as engine


def test_all_names_the_public_surface() -> None:
    assert sorted(engine.__all__) == [
        "Agent", "Claw", "ClawBuilder", "Conversation", "Message", "Response", "ResponseStream",
        "Turn", "TurnStream",
    ]
    for name in engine.__all__:
        assert getattr(engine, name).__module__.startswith("claw_memory.engine.")
