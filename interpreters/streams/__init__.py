"""Stream functions: what carries out the core's ``CallLlm`` effect.

A stream function takes ``(model, context, options)`` and returns the provider's stream of
events (an iterator, or an async iterator under asyncio). Each module here is one way to answer
a model call:

- :mod:`~interpreters.streams.scripted`: :class:`ScriptedModel`, replies written in the test;
- :mod:`~interpreters.streams.http`: real providers over HTTP (``HttpStreamer``,
  ``AsyncHttpStreamer``);
- :mod:`~interpreters.streams.recorded`: :class:`RecordedModel`, a transcript's replies played
  back call by call (what LLM-only replay runs on);
- :mod:`~interpreters.streams.cassette`: :class:`~interpreters.streams.cassette.Cassette`,
  recorded replies given to the calls that ask what was recorded, each answer labelled and each
  miss explained.
"""

from .scripted import ScriptedModel

__all__ = ["ScriptedModel"]
