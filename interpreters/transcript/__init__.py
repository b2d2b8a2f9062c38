"""Transcripts: an append-only JSONL journal of one run, and its reader.

The core is a pure function, so a run is fully described by its initial state and the inputs
fed to it. A transcript stores exactly that, plus the effects the core asked for (so a replay
can tell when the code now behaves differently). The format is described, with examples and a
compatibility promise, in ``docs/transcript-format.md``. The package is split by job:

- :mod:`~interpreters.transcript.format`: versions, the shapes of the lines, the digests of
  ``message_update`` effects;
- :mod:`~interpreters.transcript.encode`: inputs and effects as the lines hold them (histories
  as deltas against the previous one, text built once per record);
- :mod:`~interpreters.transcript.recorder`: :class:`TranscriptRecorder`, the journal that writes
  a run's transcript (give it to any interpreter as ``journal=``), scrubbed of secrets;
- :mod:`~interpreters.transcript.read`: :func:`read_transcript`, which checks every line, drops
  a torn last one with a warning and expands runs of deltas;
- :mod:`~interpreters.transcript.writer`: :class:`TranscriptFile`, a file claimed by one writer
  (a second one, in this process or another, gets :class:`TranscriptBusy`).

Every public name of the five modules is importable from here.
"""

from .encode import EffectEncoder, Memo, encode_input
from .format import (
    DIGESTS_VERSION,
    ENCODER_DIGESTS_VERSION,
    FORMAT,
    READABLE_VERSIONS,
    VERSION,
    FlushMode,
    TranscriptError,
    compact_json,
    delta_run_digest,
    is_update,
    update_digest,
)
from .read import Entry, SeqDelta, Transcript, decode_state, expand, parse_transcript, read_transcript
from .recorder import TranscriptRecorder, record_to
from .writer import TranscriptBusy, TranscriptFile

__all__ = [
    "DIGESTS_VERSION",
    "ENCODER_DIGESTS_VERSION",
    "EffectEncoder",
    "Entry",
    "FORMAT",
    "FlushMode",
    "Memo",
    "READABLE_VERSIONS",
    "SeqDelta",
    "Transcript",
    "TranscriptBusy",
    "TranscriptError",
    "TranscriptFile",
    "TranscriptRecorder",
    "VERSION",
    "compact_json",
    "decode_state",
    "delta_run_digest",
    "encode_input",
    "expand",
    "is_update",
    "parse_transcript",
    "read_transcript",
    "record_to",
    "update_digest",
]
