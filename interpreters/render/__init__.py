"""Rendering agent runs for people: live in a terminal, and recorded runs as text or HTML.

Used by the ``agentcore`` command (:mod:`interpreters.cli`); usable on its own. The package
re-exports the public names of its modules:

- :mod:`~interpreters.render.live`: live rendering in a terminal (plain text or rich);
- :mod:`~interpreters.render.conversation`: a recorded run folded into turns and tool calls;
- :mod:`~interpreters.render.text` and :mod:`~interpreters.render.html`: that conversation as
  terminal text, or as one self-contained HTML page;
- :mod:`~interpreters.render.common`: message text, usage totals, costs, terminal safety.

Live rendering
--------------
A renderer is a callable taking each :class:`~agentcore.AgentEvent` of a run, in order (pass
it as ``emit=`` or call it while iterating ``agent_loop``). The event logic lives in
:class:`LiveRenderer`; what differs between outputs is five primitives (begin a labelled line,
write streamed text, print a whole line, show/hide the tools that are running):

* :class:`PlainRenderer`: plain text, ANSI colours only when the output is a terminal. Needs
  nothing beyond the runtime dependencies (the demo must run on a fresh install).
* :class:`RichRenderer`: styled with `rich <https://rich.readthedocs.io>`_ (the ``cli`` extra),
  with a spinner while tools run.

:func:`make_renderer` picks ``RichRenderer`` for a terminal when rich is installed, else
``PlainRenderer`` (so piped output is always plain text).

Recorded runs
-------------
:func:`build_conversation` folds the events of a run (a replayed transcript's, say) into
:class:`Conversation`: turns, each with its user and assistant messages, the tool calls of each
assistant message with their results, and the usage and cost per turn. :func:`conversation_text`
renders it as text (``agentcore transcript show``) and :func:`conversation_html` as one
self-contained HTML page (``agentcore transcript html``).
"""

from .common import UsageTotals, format_args, message_text, money, terminal_safe
from .conversation import AssistantEntry, Conversation, OtherEntry, ToolCallEntry, Turn, UserEntry, build_conversation
from .html import conversation_html
from .live import LiveRenderer, PlainRenderer, RichRenderer, isatty, make_renderer, rich_available
from .text import conversation_text

__all__ = [
    "AssistantEntry",
    "Conversation",
    "LiveRenderer",
    "OtherEntry",
    "PlainRenderer",
    "RichRenderer",
    "ToolCallEntry",
    "Turn",
    "UsageTotals",
    "UserEntry",
    "build_conversation",
    "conversation_html",
    "conversation_text",
    "format_args",
    "isatty",
    "make_renderer",
    "message_text",
    "money",
    "rich_available",
    "terminal_safe",
]
