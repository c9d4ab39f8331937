"""RouterMemory: exact-match routing, introspection, search fallback, closing."""

from __future__ import annotations

import pytest

from claw_memory import ArrayMemory, InvalidNamespaceError, RouterMemory
from tests.support.factories import PlainMemory


async def test_namespaces_go_to_their_routes_by_exact_match() -> None:
    default, conversations = ArrayMemory(), ArrayMemory()
    router = RouterMemory(default, routes={"conversations": conversations})
    await router.set("c1", {"messages": []}, "conversations")
    await router.set("fact", "x", "conversations:archive")
    assert await conversations.all("conversations") == {"c1": {"messages": []}}
    assert await default.all("conversations:archive") == {"fact": "x"}
    assert router.driver_for("conversations") is conversations
    assert router.driver_for("other") is default
    assert router.default_driver() is default
    assert router.routes() == {"conversations": conversations}
    router.routes().clear()  # a copy: the router keeps its routes
    assert router.driver_for("conversations") is conversations


async def test_search_ranks_all_of_a_driver_without_search() -> None:
    plain = PlainMemory()
    router = RouterMemory(ArrayMemory(), routes={"facts": plain})
    await plain.set("a", "gold tier customer", "facts")
    await plain.set("b", "silver tier", "facts")
    hits = await router.search("gold tier", 5, "facts")
    assert [(h.key, h.score, h.namespace) for h in hits] == [
        ("a", 2.0, "facts"),
        ("b", 1.0, "facts"),
    ]
    assert await router.search("gold", 0, "facts") == []
    with pytest.raises(InvalidNamespaceError):
        await router.search("gold", 0, "bad namespace")


async def test_router_validates_nothing_itself_the_driver_does() -> None:
    router = RouterMemory(ArrayMemory())
    with pytest.raises(InvalidNamespaceError):
        await router.set("k", 1, "a/b")


async def test_aclose_closes_each_distinct_driver_once() -> None:
    closed: list[str] = []

    class Closing(ArrayMemory):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        async def aclose(self) -> None:
            closed.append(self.name)

    shared = Closing("shared")
    async with RouterMemory(shared, routes={"a": shared, "b": Closing("b")}):
        pass
    assert sorted(closed) == ["b", "shared"]


def test_routes_must_be_memories() -> None:
    with pytest.raises(TypeError):
        RouterMemory(ArrayMemory(), routes={"a": object()})  # type: ignore[dict-item]
