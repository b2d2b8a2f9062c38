"""Cassettes: model calls answered from recorded transcripts by what they ask.

- :mod:`~interpreters.streams.cassette.request`: the canonical form of a model request, the
  match policy (key, checked and ignored fields) and the differences between two requests;
- :mod:`~interpreters.streams.cassette.cassette`: :class:`Cassette`, the stream function that
  answers from the recordings, labels every answer and explains every miss;
- :mod:`~interpreters.streams.cassette.tools`: the recorded tool results, answered by tool name
  and arguments (``Cassette.tools()``).
"""

from .cassette import Answer, Cassette, CassetteMiss, CassetteReport, Label, Recording, ToolAnswer, ToolRecording
from .request import PRESETS, Difference, MatchPolicy

__all__ = [
    "Answer",
    "Cassette",
    "CassetteMiss",
    "CassetteReport",
    "Difference",
    "Label",
    "MatchPolicy",
    "PRESETS",
    "Recording",
    "ToolAnswer",
    "ToolRecording",
]
