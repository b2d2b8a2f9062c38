"""What an MCP tool call's result becomes: content the model sees, the rest in ``details``.

- text blocks stay text; image blocks stay images (base64 and MIME type);
- an embedded text resource becomes text headed by its URI; audio, a resource link and an
  embedded binary resource become one line of text saying what they are (the model cannot take
  them as such), and are kept whole in ``details["blocks"]``;
- structured content goes to ``details["structured_content"]``;
- a result the server marks ``isError`` is an error result the model sees (``is_error=True``:
  its text, and ``details`` as for any result).
"""

from __future__ import annotations

from typing import Any

from agentcore import AgentToolResult, ImageContent, TextContent

__all__ = ["tool_result", "progress_result"]


def _dump(block: Any) -> Any:
    return block.model_dump(by_alias=True, mode="json", exclude_none=True)


def _described(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "audio":
        size = len(block.data) * 3 // 4 - block.data[-2:].count("=")
        return f"[audio: {block.mime_type}, {size} bytes]"
    if kind == "resource_link":
        what = f" ({block.name})" if getattr(block, "name", None) else ""
        return f"[resource link: {block.uri}{what}]"
    resource = getattr(block, "resource", None)
    mime = getattr(resource, "mime_type", None) or "application/octet-stream"
    return f"[resource: {getattr(resource, 'uri', '')}, {mime}]"


def tool_result(result: Any) -> AgentToolResult:
    """The agent's tool result of an MCP ``CallToolResult`` (an error result when it is one)."""
    content: list[TextContent | ImageContent] = []
    kept: list[Any] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            content.append(TextContent(block.text))
        elif kind == "image":
            content.append(ImageContent(block.data, block.mime_type))
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            content.append(TextContent(f"{block.resource.uri}:\n{block.resource.text}"))
        else:
            content.append(TextContent(_described(block)))
            kept.append(_dump(block))
    details: dict[str, Any] = {}
    if result.structured_content is not None:
        details["structured_content"] = result.structured_content
    if kept:
        details["blocks"] = kept
    if result.is_error and not content:
        content.append(TextContent("the tool failed"))
    return AgentToolResult(tuple(content), details or None, is_error=bool(result.is_error))


def progress_result(progress: float, total: float | None, message: str | None) -> AgentToolResult:
    """A progress notification as a partial result (``tool_execution_update``)."""
    done = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    text = f"{message} ({done})" if message else done
    return AgentToolResult((TextContent(text),), {"progress": progress, "total": total, "message": message})
