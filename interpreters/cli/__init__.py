"""The ``agentcore`` command: run agents and debug their transcripts from a shell.

Subcommands (``agentcore SUBCOMMAND --help`` for each; ``docs/cli.md`` for the whole story):

* ``demo``: the offline demo (scripted model, real tools, a steering message), recorded to a
  transcript that is then replayed strictly.
* ``run PROMPT --model PROVIDER/MODEL``: one run against a real provider (``--json`` for
  scripts); ``chat``: an interactive session (typing while the agent works steers it).
* ``transcript show|replay|diff|state|fork|resume|html``: inspect, check and continue
  recorded runs; ``transcript resume FILE --approve ID ...`` decides a recorded suspension
  (on a terminal without decisions, it asks).

Conventions: exit code 0 ok, 1 the run failed (or a replay diverged, or a suspension was
resumed already), 2 usage error, 3 the run is suspended (tool calls wait for a decision; the
waiting calls and the command that decides them are printed on stderr), 130 when a second
Ctrl-C stopped the command. A user mistake (no API key, unknown model, missing file, a tools
module that does not load, a damaged transcript) prints one line saying what to do and no
traceback; ``--debug`` shows it. Rendering is in :mod:`interpreters.render` (``rich`` on a
terminal when installed, plain text otherwise).

One module per command group: :mod:`~interpreters.cli.run` (``demo``, ``run``),
:mod:`~interpreters.cli.chat`, :mod:`~interpreters.cli.transcript` (deciding a suspension:
:mod:`~interpreters.cli.deciding`); what they share is in
:mod:`~interpreters.cli.common`, the parser and :func:`main` in :mod:`~interpreters.cli.command`.
``python -m interpreters.cli`` runs the command too.
"""

from .command import build_parser, main
from .common import UsageError

__all__ = ["UsageError", "build_parser", "main"]
