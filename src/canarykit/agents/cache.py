"""A content-addressed, on-disk cache of model responses: no model call is paid for twice.

The key is the canonical JSON of everything that decides a response (the backend's
``cache_scope``: endpoint, model, decoding; the messages; the tools), never an API key.
Entries are written atomically (``cache_dir/<h[:2]>/<h>.json``), so a crash leaves a whole
entry or none, and a crashed run resumes without repeating the calls it had already made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..store.castore import ContentStore
from ..store.jsonio import canonical_json, content_hash
from .protocol import ChatResponse
from .secrets import scrub_values

CACHE_FORMAT = 1


def response_key(scope: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                 *, sample: int = 0, repeat: int | None = None) -> str:
    """The cache key of a request; ``sample`` > 0 numbers a repeated draw of the same request
    (a judge re-asked after an unparseable reply) and ``repeat`` an independent repetition (a
    stability re-grading): each gets its own entry. Without either the key is the plain one."""
    ident: dict[str, Any] = {"format": CACHE_FORMAT, "scope": dict(scope), "messages": list(messages), "tools": list(tools)}
    if sample:
        ident["sample"] = int(sample)
    if repeat is not None:
        ident["repeat"] = int(repeat)
    return content_hash(ident)


class ResponseCache:
    """Model responses by request hash. Unreadable entries count as misses (and are rewritten)."""

    #: The largest entry read back (characters): a long reply with its tool calls.
    MAX_ENTRY_CHARS = 20_000_000

    def __init__(self, cache_dir: str | Path) -> None:
        self.dir = Path(cache_dir)
        self.store = ContentStore(self.dir)

    def path(self, key: str) -> Path:
        return self.store.path(key)

    def get(self, key: str) -> ChatResponse | None:
        data = self.store.read_json(key, max_chars=self.MAX_ENTRY_CHARS)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        try:
            return ChatResponse.from_dict(data["response"])
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: str, response: ChatResponse) -> None:
        # A configured key echoed by a gateway inside a reply never reaches the disk either.
        self.store.write_text(key, scrub_values(canonical_json({"key": key, "response": response.to_dict()})))
