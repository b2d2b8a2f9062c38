"""``@tool``: a typed Python function becomes an :class:`~agentcore.tools.AgentTool`.

- :mod:`~interpreters.tool.decorator`: :func:`tool` and :class:`ToolContext`, the generated
  ``execute`` and how return values become results;
- :mod:`~interpreters.tool.schema`: the JSON schema of the parameters, from the type hints, and
  the converters from validated JSON back to the annotated types;
- :mod:`~interpreters.tool.docstrings`: the descriptions, from the docstring.
"""

from .decorator import ToolContext, tool

__all__ = ["ToolContext", "tool"]
