"""Stream chat replies as Server-Sent Events, with conversations kept in Redis.

Run it (needs the ``redis`` extra, Starlette and uvicorn)::

    REDIS_URL=redis://127.0.0.1:6379/0 python examples/sse_chat.py

and talk to it::

    curl -N -X POST http://127.0.0.1:8000/chat -H 'content-type: application/json' \\
         -d '{"message": "Hello, I am Alice"}'

    event: conversation
    data: {"id": "01J..."}

    data: {"delta": "Hell"}
    ...
    event: done
    data: {"conversation_id": "01J...", "turns": 1, "recalled": []}

Send ``"conversation_id"`` back to continue the conversation; ``GET /conversations/{id}``
returns its stored messages. The model is the offline ``EchoModel`` unless ``CLAW_MODEL`` names
one (``gpt-4o-mini`` with ``OPENAI_API_KEY``, or ``http://127.0.0.1:11434/v1/llama3.2``),
as for ``claw-memory chat``.

If the client goes away mid-reply, Starlette cancels the response; closing the engine's stream
then stops the model and stores nothing of the unfinished turn. Note that ``RedisMemory``
expires entries after one day by default, conversations included: pass ``default_ttl=0`` to keep
them.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from claw_memory import Memory
from claw_memory.engine import Agent, Claw, Conversation
from claw_memory.errors import ClawMemoryError, GuardBlockedError
from claw_memory.models import EchoModel, Model, OpenAICompatibleModel


def sse(data: dict[str, Any], event: str | None = None) -> str:
    """One Server-Sent Event: an optional ``event:`` line, a JSON ``data:`` line, a blank line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def reply_events(
    agent: Agent, conversation: Conversation, message: str
) -> AsyncIterator[str]:
    """The events of one reply: the conversation id, each text delta, then ``done``."""
    yield sse({"id": conversation.id}, "conversation")
    stream = agent.stream_in_conversation(conversation, message)
    try:
        async for delta in stream:
            yield sse({"delta": delta})
        turn = stream.turn
        yield sse(
            {"conversation_id": turn.conversation.id, "turns": turn.conversation.turn_count,
             "recalled": list(turn.response.recalled)},
            "done",
        )
    except GuardBlockedError as exc:
        yield sse({"error": "blocked", "guard": exc.guard, "reason": exc.reason}, "error")
    except ClawMemoryError as exc:
        yield sse({"error": type(exc).__name__}, "error")
    finally:
        # On a client disconnect this generator is cancelled; the shield lets the close finish,
        # so the model stream is released and the unfinished turn is not stored.
        with anyio.CancelScope(shield=True):
            await stream.aclose()


def _bad_request(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


def create_app(agent: Agent, *, close: list[Any] | None = None) -> Starlette:
    """The web app around ``agent``; objects in ``close`` are ``aclose()``-d at shutdown."""

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _bad_request("the body must be JSON")
        if not isinstance(body, dict):
            return _bad_request("the body must be a JSON object")
        message = body.get("message")
        conversation_id = body.get("conversation_id")
        if not isinstance(message, str) or not message.strip():
            return _bad_request("'message' must be a non-empty string")
        if conversation_id is not None and not isinstance(conversation_id, str):
            return _bad_request("'conversation_id' must be a string")
        conversation = await agent.conversation(id=conversation_id)
        return StreamingResponse(
            reply_events(agent, conversation, message),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def history(request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        conversation = await agent.conversation(id=conversation_id)
        if conversation.id != conversation_id:
            return JSONResponse({"error": "no such conversation"}, status_code=404)
        return JSONResponse({
            "id": conversation.id,
            "messages": [{"role": m.role, "content": m.content} for m in conversation.history],
        })

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            for resource in close or ():
                await resource.aclose()

    return Starlette(
        routes=[
            Route("/chat", chat, methods=["POST"]),
            Route("/conversations/{conversation_id}", history, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def model_from_environment() -> Model:
    """``EchoModel``, or the OpenAI-compatible model ``CLAW_MODEL`` names."""
    name = os.environ.get("CLAW_MODEL", "echo")
    if name == "echo":
        return EchoModel()
    api_key = os.environ.get("OPENAI_API_KEY")
    if "://" in name:
        base, _, model = name.partition("/v1/")
        return OpenAICompatibleModel(base + "/v1", model, api_key=api_key)
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    return OpenAICompatibleModel(base_url, name, api_key=api_key)


def build(memory: Memory | None = None, model: Model | None = None) -> Starlette:
    """The app with conversations in Redis (``REDIS_URL``) unless ``memory`` is given."""
    close: list[Any] = []
    if memory is None:
        from claw_memory.drivers.redis import RedisMemory

        memory = RedisMemory(url=os.environ.get("REDIS_URL"))
        close.append(memory)
    if model is None:
        model = model_from_environment()
        if isinstance(model, OpenAICompatibleModel):
            close.append(model)
    agent = Claw.builder().memory(memory).model(model).build()
    return create_app(agent, close=close)


def main() -> None:
    import uvicorn

    host = os.environ.get("HOST", "127.0.0.1")
    port = int(os.environ.get("PORT", "8000"))
    uvicorn.run(build(), host=host, port=port)


if __name__ == "__main__":
    main()
