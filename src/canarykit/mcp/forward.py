"""What ``canarykit proxy`` passes between its client and its upstreams, besides the tool list and the calls.

The proxy stands between one client (or several, over HTTP) and its upstream servers. So
that a client sees through it what it sees directly:

- **Capabilities.** Each upstream is told the client side supports sampling, elicitation
  (form and URL) and roots, so it offers every tool it offers such a client (a server may
  list tools only for clients that can answer them); a request the proxy's own client cannot
  answer (it did not declare the capability) is refused back to the server with an error
  naming it.
- **Server requests** (``sampling/createMessage``, ``elicitation/create``, ``roots/list``)
  are asked of the client whose call is in flight on that server (the oldest one when several
  are), on that call's channel; with no call in flight, of the last client session (handshake
  protocols only). Clients of protocol 2026-07-28, which takes no server requests, get them
  as an ``input_required`` result of their call, and the call goes on when they retry it with
  the answers (:class:`Flight`: the upstream call keeps running meanwhile).
- **Notifications.** A server's progress for a forwarded call reaches the call's client
  (against the client's own progress token), a server's log messages the client whose call
  is in flight (or the last session), at the levels it asked for; a URL elicitation's
  completion is passed on. A client's ``notifications/roots/list_changed`` and its
  ``logging/setLevel`` go to every upstream; a client's cancellation of a call cancels the
  forwarded call (the SDK sends the server ``notifications/cancelled``).
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .upstream import ConnectedServer

__all__ = ["Flight", "Relay", "is_modern", "was_cancelled"]

#: The client capability each server request needs.
_NEEDS: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


def is_modern(ctx: Any) -> bool:
    """Whether the request came over protocol 2026-07-28 or later (no server requests)."""
    return str(getattr(ctx, "protocol_version", "")) in MODERN_PROTOCOL_VERSIONS


def was_cancelled(ctx: Any) -> bool:
    """Whether the client cancelled this request (``notifications/cancelled``), as opposed to
    the session ending under it."""
    outbound = getattr(getattr(ctx, "session", None), "_request_outbound", None)
    event = getattr(outbound, "cancel_requested", None)
    return bool(event is not None and event.is_set())


@dataclass
class _Ask:
    request: Any
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None


@dataclass
class Flight:
    """One client call in flight: its current request context (a 2026-07-28 client's retries
    replace it), the upstream servers it reached, and, for such a client, the questions its
    upstream call waits on (posted as events the call's handler turns into an
    ``input_required`` result)."""

    number: int
    ctx: Any
    servers: set[str] = field(default_factory=set)
    asks: dict[str, _Ask] = field(default_factory=dict)
    events: Any = None
    inbox: Any = None
    scope: anyio.CancelScope | None = None
    end: str = "unfinished"  # how it ends if it never answers: cancelled (by its client) or unfinished
    stopped: bool = False
    done: list[Any] = field(default_factory=list)  # its outcome, once read off the inbox

    def __post_init__(self) -> None:
        self.events, self.inbox = anyio.create_memory_object_stream[tuple[str, Any]](256)

    def stop(self, end: str) -> None:
        """End the call without its answer (its client cancelled it, or is gone)."""
        self.end, self.stopped = end, True
        if self.scope is not None:
            self.scope.cancel()

    @property
    def modern(self) -> bool:
        return is_modern(self.ctx)

    def answer(self, responses: Mapping[str, Any] | None) -> None:
        """Deliver a 2026-07-28 client's answers (its retry's ``inputResponses``)."""
        for key, value in (responses or {}).items():
            ask = self.asks.pop(key, None)
            if ask is not None:
                ask.answer = value
                ask.done.set()

    def pending(self) -> dict[str, Any]:
        """The questions not yet sent to the client, by key."""
        out: dict[str, Any] = {}
        with contextlib.suppress(anyio.WouldBlock, anyio.EndOfStream):
            while True:
                kind, value = self.inbox.receive_nowait()
                if kind == "done":
                    self.done.append(value)
                elif value in self.asks:
                    out[value] = self.asks[value].request
        return out


class Relay:
    """The client side of every upstream connection (module doc): routes server requests and
    notifications to the client they belong to."""

    def __init__(self, answer_timeout_s: float) -> None:
        self.answer_timeout_s = answer_timeout_s
        self.flights: dict[int, Flight] = {}
        self.last_session: Any = None  # a handshake-protocol client's session, for requests outside a call
        self._numbers = itertools.count(1)
        self._keys = itertools.count(1)

    # ------------------------------------------------------------------ flights

    def begin(self, ctx: Any) -> Flight:
        self.seen(ctx)
        flight = Flight(next(self._numbers), ctx)
        self.flights[flight.number] = flight
        return flight

    def finish(self, flight: Flight) -> None:
        self.flights.pop(flight.number, None)
        for ask in flight.asks.values():
            ask.done.set()
        flight.events.close()

    def seen(self, ctx: Any) -> None:
        if not is_modern(ctx) and getattr(ctx, "session", None) is not None:
            self.last_session = ctx.session

    def _flight_for(self, server: str) -> Flight | None:
        on_server = [f for f in self.flights.values() if server in f.servers]
        return on_server[0] if on_server else None

    # ------------------------------------------------------------------ the callbacks of an upstream session

    def callbacks(self, server: ConnectedServer) -> dict[str, Any]:
        """The :class:`~mcp.client.session.ClientSession` keyword arguments for ``server``."""

        async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
            tools = bool(params.tools or params.tool_choice)
            result = types.CreateMessageResultWithTools if tools else types.CreateMessageResult
            return await self.ask(server.name, types.CreateMessageRequest(params=params), result)

        async def elicitation(context: Any, params: Any) -> Any:
            return await self.ask(server.name, types.ElicitRequest(params=params), types.ElicitResult)

        async def roots(context: Any) -> Any:
            return await self.ask(server.name, types.ListRootsRequest(), types.ListRootsResult)

        async def logging(params: types.LoggingMessageNotificationParams) -> None:
            await self.log(server.name, params)

        async def messages(message: Any) -> None:
            if isinstance(message, types.ElicitCompleteNotification):
                await self.notify(server.name, message)

        return {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": roots,
                "logging_callback": logging, "message_handler": messages}

    async def ask(self, server: str, request: Any, result_type: Any) -> Any:
        """Ask ``request`` of the client concerned (module doc); its answer, or ErrorData."""
        what = _NEEDS[request.method]
        flight = self._flight_for(server)
        ctx = flight.ctx if flight is not None else None
        session = ctx.session if ctx is not None else self.last_session
        if session is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"canarykit proxy: no client to ask for {what} "
                                   "(no call of this server is in flight)")
        if getattr(session.client_capabilities, what, None) is None:
            return types.ErrorData(code=types.INVALID_REQUEST,
                                   message=f"canarykit proxy: the client did not declare the {what} capability")
        if flight is not None and flight.modern:
            return await self._ask_later(flight, request)
        if ctx is None and is_modern_session(session):
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"canarykit proxy: no call to carry the {what} "
                                   "request to a client of protocol 2026-07-28")
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id) if ctx is not None else None
        try:
            with anyio.fail_after(self.answer_timeout_s):
                return await session.send_request(request, result_type, metadata=metadata)
        except MCPError as exc:
            return types.ErrorData(code=exc.code, message=exc.message, data=exc.data)
        except TimeoutError:
            return types.ErrorData(code=types.REQUEST_TIMEOUT,
                                   message=f"canarykit proxy: the client gave no {what} answer within "
                                           f"{self.answer_timeout_s:g} s")
        except Exception as exc:  # noqa: BLE001 - a client that cannot be asked is an answer too
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"canarykit proxy: cannot ask the client for "
                                                                      f"{what}: {type(exc).__name__}")

    async def _ask_later(self, flight: Flight, request: Any) -> Any:
        """A question for a 2026-07-28 client: posted to its call's handler, answered by the retry."""
        key = f"canarykit-{next(self._keys)}"
        ask = _Ask(request)
        flight.asks[key] = ask
        try:
            await flight.events.send(("ask", key))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            flight.asks.pop(key, None)
            return types.ErrorData(code=types.INVALID_REQUEST, message="canarykit proxy: the call has ended")
        with anyio.move_on_after(self.answer_timeout_s):
            await ask.done.wait()
        flight.asks.pop(key, None)
        if ask.answer is None:
            flight.stop("unfinished")  # its client never came back with the answer
            return types.ErrorData(code=types.REQUEST_TIMEOUT, message="canarykit proxy: the client did not answer "
                                   f"within {self.answer_timeout_s:g} s")
        return ask.answer

    async def log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message, to the client whose call is in flight on it, else the last session."""
        flight = self._flight_for(server)
        session = flight.ctx.session if flight is not None else self.last_session
        if session is None:
            return
        related = flight.ctx.request_id if flight is not None else None
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # logging is deprecated from 2026-07-28 on; its clients still read it
            await session.send_log_message(params.level, params.data, logger=params.logger,
                                           related_request_id=related)

    async def notify(self, server: str, notification: Any) -> None:
        flight = self._flight_for(server)
        session = flight.ctx.session if flight is not None else self.last_session
        if session is not None:
            with contextlib.suppress(Exception):
                await session.send_notification(notification, related_request_id=flight.ctx.request_id
                                                if flight is not None else None)

    def progress(self, flight: Flight) -> Any:
        """The progress callback of a forwarded call: to its client, against its own token."""

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(Exception):
                await flight.ctx.session.report_progress(progress, total, message)

        return relay


def is_modern_session(session: Any) -> bool:
    return str(getattr(session, "protocol_version", "")) in MODERN_PROTOCOL_VERSIONS
