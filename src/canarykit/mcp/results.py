"""MCP tool results, as the agent loop reads them and as a look-alike answers them.

- :func:`tool_result`: an MCP result as the loop's :class:`~canarykit.types.ToolResult` (the
  text a model reads; each non-text block described in one line), capped;
- :func:`call_result`: a canary's :class:`~canarykit.types.ToolResult` as an MCP result;
- :func:`in_real_form`: a look-alike's (canary's or twin's) answer in the form of the real
  answer it was made from: the real result's images, audio, embedded resources and resource
  links kept where they were, its text blocks replaced by the look-alike's text (a twin that
  passes the real answer through answers it block for block);
- :func:`result_size`: a result's bytes on the wire.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent

from ..tools import cap_result
from ..types import ToolResult

__all__ = ["call_result", "in_real_form", "result_size", "tool_result"]


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {getattr(block, 'mime_type', '?')}, {size:,} bytes]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return text
        size = len(getattr(res, "blob", "") or "") * 3 // 4
        return f"[resource {res.uri}: {getattr(res, 'mime_type', None) or '?'}, {size:,} bytes]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    return f"[{kind} content]"


def tool_result(result: CallToolResult, *, describe_blocks: bool = True) -> ToolResult:
    """An MCP tool result as the agent loop's :class:`~canarykit.types.ToolResult`: the text
    of its content blocks (non-text blocks described in one line each, or left out with
    ``describe_blocks=False``; the structured content as JSON when there is no block), its
    structured content as ``data`` and its error flag; capped at
    :data:`~canarykit.tools.MAX_RESULT_BYTES` (a cut result has no ``data``)."""
    blocks = result.content if describe_blocks else [b for b in result.content if getattr(b, "type", None) == "text"]
    texts = [_block_text(b) for b in blocks]
    structured = result.structured_content
    if texts:
        content = "\n".join(texts)
    elif structured is not None:
        content = json.dumps(structured, ensure_ascii=False)
    else:
        content = ""
    capped, truncated = cap_result(content)
    data = structured if isinstance(structured, dict) and not truncated else None
    return ToolResult(content=capped, is_error=bool(result.is_error), data=data)


def result_size(result: CallToolResult) -> int:
    """Bytes of a result's content and structured content (as JSON on the wire)."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True, include={"content", "structured_content"})
    return len(json.dumps(dumped, ensure_ascii=False).encode("utf-8"))


def call_result(result: ToolResult) -> CallToolResult:
    """A :class:`~canarykit.types.ToolResult` (a canary's answer) as an MCP tool result: one
    text block, the structured payload when it is an object."""
    data = result.data if isinstance(result.data, dict) else None
    return CallToolResult(content=[TextContent(type="text", text=result.content)], structured_content=data,
                          is_error=bool(result.is_error))


def in_real_form(answer: ToolResult, real: CallToolResult | None) -> CallToolResult:
    """``answer`` (a look-alike's, made from the real result ``real``) with the real result's
    non-text blocks where the real tool put them (module doc). Without a real result, or one
    of text blocks only, the answer is :func:`call_result`'s."""
    base = call_result(answer)
    if real is None or all(getattr(b, "type", None) == "text" for b in real.content):
        return base
    texts = [b.text for b in real.content if isinstance(b, TextContent)]
    if (answer.content == "\n".join(texts) and bool(answer.is_error) == bool(real.is_error)
            and base.structured_content == (real.structured_content if isinstance(real.structured_content, dict) else None)):
        return real  # passed through unchanged: the real answer, block for block
    parts = _split_like(answer.content, texts)
    blocks: list[Any] = []
    for block in real.content:
        if getattr(block, "type", None) != "text":
            blocks.append(block)
        elif parts:
            blocks.append(TextContent(type="text", text=parts.pop(0)))
    if not any(isinstance(b, TextContent) for b in blocks) and answer.content:
        blocks.insert(0, TextContent(type="text", text=answer.content))
    return CallToolResult(content=blocks, structured_content=base.structured_content, is_error=bool(answer.is_error))


def _split_like(text: str, texts: list[str]) -> list[str]:
    """``text`` (a look-alike's, made from ``texts`` joined by newlines) cut back into as many
    parts, each with the lines its real block had (the last takes what was added); when the
    look-alike has fewer lines than that, one part."""
    counts = [t.count("\n") + 1 for t in texts]
    lines = text.split("\n")
    if len(texts) < 2 or len(lines) < sum(counts):
        return [text]
    parts, at = [], 0
    for i, n in enumerate(counts):
        end = len(lines) if i == len(counts) - 1 else at + n
        parts.append("\n".join(lines[at:end]))
        at = end
    return parts
