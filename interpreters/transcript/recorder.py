"""The transcript recorder: a journal that writes a run's transcript as it happens.

:class:`TranscriptRecorder` is a :class:`~interpreters.runtime.journal.Journal`: give it to any
interpreter as ``journal=``. Every line is written whole, with one ``write`` call of the
complete line including its ``"\\n"``: a line without its newline is a torn write from a crash,
which the reader drops with a warning. Consecutive deltas of one content block are held and
written as one ``deltas`` line (a "run") when the block ends, scrubbed as one text (a delta that
changed the reply's header is a step line of its own within the run). Every line
is scrubbed of the run's secrets before it is written (:mod:`interpreters.secrets`). A recorder
records one run: it claims its file against any other writer when it writes its first line
(:mod:`~interpreters.transcript.writer`) and lets go of it when the run ends or suspends, or
its event stream is closed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    Effect,
    Input,
    LoopState,
    __version__,
    initial_state,
)
from agentcore.codec import encode_bytes, prepared, to_json
from agentcore.config import hooks_set
from agentcore.effects import Emit, RunEnded, RunSuspended
from agentcore.events import MessageUpdateEvent, TurnEndEvent
from agentcore.inputs import StreamEventReceived
from agentcore.stream import PartialAssistantMessage, StartEvent

from ..runtime.clock import now_ms
from ..runtime.journal import Journal
from ..secrets import hinted, known_secrets, merge_secrets, scrub_json
from .encode import EffectEncoder
from .format import (
    CALLER_SECRETS,
    DELTA_HEADER_LINE,
    DELTA_LINE,
    DELTAS,
    DIGESTS_VERSION,
    FORMAT,
    RUN_LINE,
    UPDATE_DIGEST,
    UPDATE_TEXT,
    VERSION,
    FlushMode,
    compact_json,
    delta_run_digest,
    json_str,
    sampling_options,
)
from .writer import TranscriptFile

__all__ = [
    "TranscriptRecorder",
    "record_to",
    "tool_origins",
]


def tool_origins(tools: Sequence[Any]) -> dict[str, Any]:
    """Where the run's tools come from, by name: the ``origin`` (JSON) of each tool whose
    ``execute`` carries one (an MCP server's tools say which server, its version and protocol)."""
    found: dict[str, Any] = {}
    for tool in tools:
        origin = getattr(getattr(tool, "execute", None), "origin", None)
        if isinstance(origin, Mapping):
            found[str(tool.name)] = to_json(origin)
    return found


def _header(state: LoopState, config: AgentLoopConfig | None, interpreter: str, created_at: int,
            given: int, origins: Mapping[str, Any]) -> dict[str, Any]:
    hooks = sorted(hooks_set(config)) if config is not None else sorted(state.hooks)
    counted: dict[str, Any] = {CALLER_SECRETS: given} if given else {}
    if origins:
        counted = {"tool_origins": dict(origins), **counted}
    options = {} if config is None else {"options": sampling_options(config)}
    return {
        "transcript": FORMAT,
        "version": VERSION,
        "library_version": __version__,
        "created_at": created_at,
        "model": prepared(state.model),
        "system_prompt": state.system_prompt,
        "tools": prepared(state.tools),
        "hooks": hooks,
        "interpreter": interpreter,
        **options,
        **counted,
        "initial_state": prepared(state),
    }


def _distinct(secrets: Sequence[str]) -> tuple[str, ...]:
    """The caller's secrets, each once (empty ones left out)."""
    return tuple(dict.fromkeys(s for s in secrets if s))


_SUSPENDED_EFFECT: Final = re.compile(rb'\{\s*"type"\s*:\s*"run_suspended"')
_A_TRANSCRIPT: Final = re.compile(rb'\s*\{\s*"transcript"\s*:\s*"agentcore-fx"')
_TAIL: Final = 1 << 16


def _records_a_suspension(writer: TranscriptFile) -> bool:
    """Whether the claimed file is a transcript whose last step suspended its run: tool calls
    wait for decisions (a resume line after it, with no step yet, leaves it suspended)."""
    fd = writer.fileno()
    end = os.fstat(fd).st_size
    if end == 0 or _A_TRANSCRIPT.match(os.pread(fd, 64, 0)) is None:
        return False
    while end > 0:
        start = _line_start(fd, end - 1)  # (the line's own newline is not looked at)
        line = os.pread(fd, end - start, start)
        if not line.lstrip().startswith(b'{"resumed_'):
            return line.startswith(b'{"step"') and _SUSPENDED_EFFECT.search(line) is not None
        end = start
    return False


def _line_start(fd: int, end: int) -> int:
    """Where the line that ends before ``end`` starts (after the newline before it, or 0)."""
    while end > 0:
        start = max(0, end - _TAIL)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _which_interpreter() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "sync"
    return "asyncio"


class _DeltaRun:
    """Consecutive stream deltas of one content block, each answered by one ``message_update``
    (``header``: the header of the partial the last one carries; ``headers``: the new header
    each delta that changed it brought, by its index in the run, or ``None``: none did)."""

    __slots__ = ("step", "id", "kind", "index", "header", "texts", "ats", "headers")

    def __init__(self, step: int, id: int, kind: type, index: int, header: Any, texts: list[str],
                 ats: list[int], headers: dict[int, Any] | None) -> None:
        self.step = step
        self.id = id
        self.kind: Any = kind
        self.index = index
        self.header = header
        self.texts = texts
        self.ats = ats
        self.headers = headers


class TranscriptRecorder(Journal):
    """Writes a run's transcript; pass it as ``journal=`` to any interpreter.

    >>> import tempfile, os
    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel, run_agent_loop
    >>> from interpreters.transcript import read_transcript
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    >>> _ = run_agent_loop("hi", ctx, cfg, emit=lambda e: None,
    ...                    stream_fn=ScriptedModel(["Hello!"]), journal=TranscriptRecorder(path, ctx, cfg))
    >>> read_transcript(path).steps > 0
    True

    ``context`` and ``config`` must be the ones given to the run: they give the secrets to scrub
    and the hooks the header lists; the header's initial state (model, system prompt, tools) is
    the state the run starts from, which the run tells its journals (a resumed run's suspended
    state, say). The header is written on the first step, when the recorder also sees which
    interpreter runs it. A recorder records one run: it claims its file (a second recorder on
    the same file, in this process or another, is refused with ``TranscriptBusy`` and writes
    nothing) and lets go of it, closed, when the run ends or suspends, or its stream is closed.
    ``flush="entry"`` writes each step as it happens, except the deltas of the block being
    streamed, which are held and written as one line when the block ends (a crash loses only
    them, and ``resume`` asks for an interrupted reply again anyway); ``flush="turn"`` holds the
    lines of a turn and writes them with one call at its end (a crash loses at most the current
    turn). ``fsync=True`` also forces each write to disk. ``secrets`` adds strings that must never be
    written: the header says how many were given (never them), and a resume into the file must be
    given them again. Until the run's ``get_api_key`` has given its key, lines are held back
    (:meth:`keys_pending`). The file at ``path`` is replaced, but for the transcript of a run that
    suspended (tool calls wait for decisions), which is refused with ``FileExistsError`` at the
    first step, before anything is truncated, unless ``overwrite=True``. Given as the journal of
    the resumed run of the suspension it recorded, a recorder goes on recording it in its file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        context: AgentContext | None = None,
        config: AgentLoopConfig | None = None,
        *,
        state: LoopState | None = None,
        flush: FlushMode = "entry",
        fsync: bool = False,
        interpreter: str | None = None,
        secrets: Sequence[str] = (),
        overwrite: bool = False,
    ) -> None:
        if flush not in ("entry", "turn"):
            raise ValueError(f"flush must be 'entry' or 'turn', not {flush!r}")
        if state is None:
            if context is None or config is None:
                raise TypeError("TranscriptRecorder needs the run's context and config (or state=)")
            state = initial_state(context, config)
        self._origins = tool_origins(context.tools) if context is not None else {}
        self.path = Path(path)
        self.flush_mode: FlushMode = flush
        self.fsync = fsync
        self.interpreter = interpreter
        self.overwrite = overwrite
        self.secrets = known_secrets(config, secrets)
        self.encoder = EffectEncoder(secrets=self.secrets)
        self._given = _distinct(secrets)
        self._key_held = False
        self._suspended = False
        self._steps = 0
        self._state: LoopState | None = state
        self._config = config
        self._writer: TranscriptFile | None = None
        self._file: Any = None
        self._buffer: list[str] = []
        self._offset = 0
        self._run: _DeltaRun | None = None
        self._runs = True
        self._size = 0
        self._closed = False
        self._used = False
        self._header: Any = None
        """The header of the partial the stream's events carry: a block event whose partial
        has another one records it (a stream function may change usage or ``response_id``
        between events, and the core reads the partial's header when a reply is cut)."""

    @classmethod
    def appending(cls, path: str | os.PathLike[str], config: AgentLoopConfig | None, *, base_step: int,
                   encoder: EffectEncoder, marker: dict[str, Any], version: int = VERSION,
                   flush: FlushMode = "entry", fsync: bool = False, secrets: Sequence[str] = (),
                   claimed: TranscriptFile | None = None) -> TranscriptRecorder:
        """A recorder that goes on writing an existing transcript after ``base_step`` (what
        :func:`interpreters.replay.resume` records with), in the transcript's own ``version`` (a
        version-1 file gets no ``deltas`` lines): it writes ``marker`` (the resume line) at once,
        and goes on with ``encoder``, the one that replayed the transcript's first ``base_step``
        steps (it remembers the histories the next lines are written against). ``claimed``: the
        file, claimed already by the caller who read it (else it is claimed here), which the
        recorder now owns."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.flush_mode = flush
        self.fsync = fsync
        self.interpreter = None
        self.overwrite = False
        self.secrets = known_secrets(config, secrets)
        self._given = _distinct(secrets)
        self._key_held = False
        self._suspended = False
        self.encoder = encoder
        encoder.secrets, encoder.digests, encoder.version = self.secrets, version >= DIGESTS_VERSION, version
        self._steps = base_step
        self._state = None
        self._config = config
        self._writer = claimed if claimed is not None else TranscriptFile.claim(self.path, create=False)
        self._file = self._writer.file
        self._file.seek(0, os.SEEK_END)
        self._buffer = []
        self._offset = base_step
        self._header = None
        self._run = None
        self._runs = version >= 2
        self._size = os.fstat(self._file.fileno()).st_size
        self._closed = False
        self._used = False
        self._write(encode_bytes(marker).decode("utf-8") + "\n", now=True)
        return self

    # -- the Journal protocol

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        run = self._run
        if run is not None and type(input) is StreamEventReceived and len(effects) == 1:
            # The hot path of a streamed reply: the next delta of the run being held, whose
            # update is the event itself and its partial (then the run's digest holds).
            ev: Any = input.event
            if (type(ev) is run.kind and ev.content_index == run.index and input.id == run.id
                    and type(input.at) is int and getattr(ev.partial, "header", None) is run.header):
                e0: Any = effects[0]
                delta, partial = ev.delta, ev.partial
                if (type(e0) is Emit and type(e0.event) is MessageUpdateEvent
                        and e0.event.message is partial and e0.event.assistant_message_event is ev):
                    run.texts.append(delta)
                    run.ats.append(input.at)
                    return
        if self._closed:
            raise ValueError(f"{self.path}: the recorder is closed (a run recorded after close())")
        self._used = True
        header = None
        if type(input) is StreamEventReceived:
            partial = getattr(input.event, "partial", None)
            if type(partial) is PartialAssistantMessage:
                if type(input.event) is StartEvent:
                    self._header = partial.header
                elif partial.header is not self._header:
                    header = self._header = partial.header
        if (type(input) is StreamEventReceived and len(effects) == 1
                and type(input.event) in DELTAS and type(input.at) is int and self._runs):
            e0 = effects[0]
            ev = input.event
            # The update must be the event itself and its partial: then the run's digest holds.
            own = type(e0) is Emit and type(e0.event) is MessageUpdateEvent and (
                e0.event.message is ev.partial and e0.event.assistant_message_event is ev)
            if own:
                run = self._run
                if run is not None and type(ev) is run.kind and ev.content_index == run.index and input.id == run.id:
                    if header is not None:  # a new usage, say: the run goes on (scrubbed as one text)
                        if run.headers is None:
                            run.headers = {}
                        run.headers[len(run.texts)] = run.header = header
                    run.texts.append(ev.delta)  # (a partial whose header is not one: see the hot path)
                    run.ats.append(input.at)
                else:
                    self._start_run(self._offset + step, input, header)
                return
        if self._file is None:
            self._open()
        held = self._end_run() if self._run is not None else ""  # written with this step's line
        n = self._steps = self._offset + step
        line = self.encoder.line(n, input, effects, header)
        if hinted(line) or self._holds_secret(line):
            line = scrub_json(line, self.secrets)
        end_of_turn = end_of_run = False
        for e in effects:
            kind = type(e)
            if kind is RunEnded or kind is RunSuspended:
                end_of_run = True
                self._suspended = kind is RunSuspended
            elif kind is Emit and type(e.event) is TurnEndEvent:  # type: ignore[union-attr]
                end_of_turn = True
        self._put(held + line, now=end_of_turn or end_of_run)
        if end_of_run:  # the run's last step: the file is free for the next writer (a resume)
            self.close()

    def run_started(self, state: LoopState) -> None:
        """The run starts from ``state``: the header's initial state (a resumed run starts from
        its suspended state). A recorder records one run: one that recorded a run already is
        refused (``ValueError``), before anything runs. (The recorder of a run up to its
        suspension, given to the resumed run, goes on recording it at the end of its file:
        :meth:`recorded_suspension`, :meth:`go_on`.)"""
        if self._closed or self._used:
            what = ("the recorder is closed: it recorded a run already, or close() was called" if self._closed
                    else "this recorder recorded a run already")
            raise ValueError(f"{self.path}: {what} (a recorder records one run): give this run a new recorder "
                             "(a resumed run: transcript=path goes on in the same file)")
        if self._state is not None:
            self._state = state

    def continues(self, path: str | os.PathLike[str]) -> bool:
        """Whether this recorder recorded a run up to its suspension in the file at ``path``
        (the same file, by any name): given as the resumed run's journal, it goes on with it."""
        if not (self._closed and self._suspended):
            return False
        try:
            return os.path.samefile(self.path, path)
        except OSError:
            return False

    def recorded_suspension(self) -> bool:
        """Whether this recorder recorded a run up to its suspension (and let go of the file):
        given as the resumed run's journal, it goes on recording that run at the end of its
        file (:meth:`go_on`), as ``transcript=path`` would, with its own secrets, ``flush`` and
        ``fsync`` (:meth:`continuation_options`)."""
        return self._closed and self._suspended

    def continuation_options(self) -> dict[str, Any]:
        """What the recorder that continues this file takes from this one: the config, the
        secrets it was given, ``flush`` and ``fsync`` (keyword arguments of
        :func:`interpreters.replay.recovery.continue_transcript`)."""
        return {"config": self._config, "secrets": self._given, "flush": self.flush_mode, "fsync": self.fsync}

    def go_on(self, continuation: TranscriptRecorder) -> None:
        """Become ``continuation``, the recorder that continues this file with the resumed run
        (made with :meth:`continuation_options`); it keeps the secrets this one knows."""
        known = self.secrets
        self.__dict__.update(continuation.__dict__)
        continuation._writer = continuation._file = None  # the file (and what is held) is this recorder's now
        continuation._buffer, continuation._closed = [], True
        self.secrets = self.encoder.secrets = merge_secrets(self.secrets, known)

    def run_closed(self) -> None:
        """The run's event stream closed (the run ended, or was abandoned): write what is held
        back and close the file, so that the transcript is free for the next writer."""
        self.close()

    def add_secrets(self, values: Sequence[str]) -> None:
        """Never write these either (the interpreter reports each API key a run resolves:
        ``get_api_key``'s answer, the provider's environment variable)."""
        self.secrets = self.encoder.secrets = merge_secrets(self.secrets, values)
        if self._buffer:  # held lines are written scrubbed of it too
            self._buffer = [self._scrubbed(text) for text in self._buffer]

    def keys_pending(self, pending: bool) -> None:
        """``True``: hold every line back until the run's key is known (a fresh run's header
        and first steps, before its first model call asks ``get_api_key``; a resumed run whose
        key lookup at its start failed); ``False``: the key was told (:meth:`add_secrets`), or
        will not be: write them (with ``flush="turn"``, at the turn's end). The run's end, or
        :meth:`close`, writes them too, scrubbed of what is known then."""
        if pending:
            self._key_held = True
        elif self._key_held:
            self._key_held = False
            if self.flush_mode == "entry":
                self._write_held(stacklevel=3)

    def _scrubbed(self, text: str) -> str:
        """Held lines (``text``, whole lines) scrubbed of the secrets known now."""
        if not (hinted(text) or self._holds_secret(text)):
            return text
        return "".join(scrub_json(line + "\n", self.secrets) for line in text.split("\n")[:-1])

    @property
    def steps(self) -> int:
        """How many steps the transcript holds (some may still be held back: see :meth:`flush`)."""
        run = self._run
        return self._steps if run is None else run.step + len(run.texts) - 1

    def _start_run(self, n: int, input: Any, header: Any) -> None:
        """Hold the delta of step ``n`` as the start of a new run (ending the current one);
        ``header``: the new header its partial brought (``None``: it has the previous one). While
        the run is open, :meth:`record` appends its next deltas on its first lines (the hot path
        of a streamed reply); any other step ends it."""
        if self._file is None:
            self._open()
        if self._run is not None:
            self._put(self._end_run(), now=False)
        self._steps = n
        ev = input.event
        self._run = _DeltaRun(n, input.id, type(ev), ev.content_index, self._header, [ev.delta], [input.at],
                              None if header is None else {0: header})

    def _end_run(self) -> str:
        """End the run of deltas held so far and give its lines: a step line for a lone delta,
        else a ``deltas`` line; a delta that brought a new header (a provider that sends usage
        with every chunk) gets a step line of its own that carries it, within the run. The run's
        text is scrubbed as a whole, so a secret streamed back in pieces is found, however the
        headers changed; its scrubbed text then goes in the first delta, the others are empty."""
        run = self._run
        assert run is not None
        self._run = None
        texts, ats = run.texts, run.ats
        self._steps = run.step + len(texts) - 1
        joined = texts[0] if len(texts) == 1 else "".join(texts)
        written = json_str(joined)  # the text is scrubbed as the step lines would write it
        if hinted(written) or self._holds_secret(written):
            clean = scrub_json(written, self.secrets)
            if clean != written:
                written, joined = clean, json.loads(clean)
                texts = [joined] + [""] * (len(texts) - 1)
        headers = run.headers
        if headers is None:
            return self._deltas_line(run, 0, texts, ats, written if len(texts) == 1 else None)
        lines: list[str] = []
        cuts = sorted(headers)
        starts = cuts if cuts[0] == 0 else [0, *cuts]
        for i, a in enumerate(starts):
            b = starts[i + 1] if i + 1 < len(starts) else len(texts)
            if a in headers:
                lines.append(self._header_line(run, a, texts[a], ats[a], headers[a]))
                a += 1
            if a < b:
                lines.append(self._deltas_line(run, a, texts[a:b], ats[a:b], None))
        return "".join(lines)

    def _deltas_line(self, run: _DeltaRun, first: int, texts: list[str], ats: list[int], written: str | None) -> str:
        """The line of the run's deltas ``first`` on (``texts``, scrubbed; ``written``: the lone
        one's JSON text, when known): a step line for one, else a ``deltas`` line."""
        listed = compact_json(texts)
        step = run.step + first
        if len(texts) == 1:
            update = (UPDATE_DIGEST % delta_run_digest(run.kind.type, run.index, listed)
                      if self.encoder.digests else UPDATE_TEXT)
            return DELTA_LINE % (step, run.id, run.kind.type, run.index, written or json_str(texts[0]), ats[0],
                                 update)
        at = str(ats[0]) if ats.count(ats[0]) == len(ats) else compact_json(ats)
        digest = (',"digest":"%s"' % delta_run_digest(run.kind.type, run.index, listed)
                  if self.encoder.digests else "")
        return RUN_LINE % (step, step + len(texts) - 1, run.id, run.kind.type, run.index, listed, at, digest)

    def _header_line(self, run: _DeltaRun, i: int, text: str, at: int, header: Any) -> str:
        """The step line of the run's delta ``i`` (``text``, scrubbed), whose partial brought
        ``header``, which the line carries (scrubbed too)."""
        head = bytes(self.encoder.memo.raw(header)).decode("utf-8")
        if hinted(head) or self._holds_secret(head):
            head = scrub_json(head, self.secrets)
        update = (UPDATE_DIGEST % delta_run_digest(run.kind.type, run.index, compact_json([text]))
                  if self.encoder.digests else UPDATE_TEXT)
        return DELTA_HEADER_LINE % (run.step + i, run.id, run.kind.type, run.index, json_str(text), head, at, update)

    def _holds_secret(self, line: str) -> bool:
        for secret in self.secrets:
            if secret in line:
                return True
        return False

    def _open(self) -> None:
        assert self._state is not None
        interpreter = self.interpreter or _which_interpreter()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = TranscriptFile.claim(self.path, create=True)  # before anything is truncated
        try:
            if not self.overwrite and _records_a_suspension(writer):
                raise FileExistsError(
                    f"{self.path}: it records a suspended run (tool calls wait for decisions), which a new recorder "
                    "would destroy: resume that run into it (resume_suspended(..., transcript=path)), record this run "
                    "to another path, or pass TranscriptRecorder(..., overwrite=True) to replace it")
        except BaseException:
            writer.close()
            raise
        writer.truncate(0)
        self._writer, self._file = writer, writer.file
        header = _header(self._state, self._config, interpreter, now_ms(), len(self._given), self._origins)
        self._write(encode_bytes(header).decode("utf-8") + "\n", now=True)

    def _write(self, line: str, *, now: bool) -> None:
        self._put(scrub_json(line, self.secrets), now=now)

    def _put(self, line: str, *, now: bool) -> None:
        """Write a scrubbed line (``now=False``: held until the turn ends with ``flush="turn"``)."""
        if self._key_held or (self.flush_mode == "turn" and not now):
            self._buffer.append(line)
            return
        if self._buffer:
            self._buffer.append(line)
            line = "".join(self._buffer)
            self._buffer.clear()
        self._write_bytes(_utf8(line))

    def _write_bytes(self, data: bytes) -> None:
        done = self._file.write(data)
        while done < len(data):  # a short write (rare on a file): write the rest
            done += self._file.write(data[done:])
        self._size += len(data)
        if self.fsync:
            os.fsync(self._file.fileno())

    def flush(self) -> None:
        """Write what is held back: the current run of deltas, and the turn with ``flush="turn"``.

        If the file was written by someone else since this recorder's last write (a ``resume``
        of an abandoned run went on in it), what is held is dropped with a warning instead:
        appended now it would break the transcript's order."""
        if self._run is not None:
            self._buffer.append(self._end_run())
        if not self._key_held:  # (lines held until the run's key is known wait for it, or close())
            self._write_held(stacklevel=3)

    def _write_held(self, *, stacklevel: int) -> None:
        if not self._buffer or self._file is None:
            return
        data = _utf8("".join(self._buffer))
        self._buffer.clear()
        if os.fstat(self._file.fileno()).st_size != self._size:
            held = data.count(b"\n")
            warnings.warn(f"{self.path} was written by another writer since this recorder's last line; "
                          f"its {held} held line(s) are dropped", RuntimeWarning, stacklevel=stacklevel)
            return
        self._write_bytes(data)

    def close(self) -> None:
        """Write what is held back and close the file (recording after this is an error)."""
        try:
            self._key_held = False  # the run goes no further: nothing more will be known
            self.flush()
        finally:
            self._closed = True
            writer, self._writer, self._file = self._writer, None, None
            if writer is not None:
                writer.close()

    def __enter__(self) -> TranscriptRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bytes:
    """Lines as UTF-8. A lone surrogate (half of an emoji cut by a stream), which UTF-8 cannot
    hold, can only stand inside a JSON string of a line: it is written as its JSON escape there,
    which reads back as the same string."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), text).encode("utf-8")


def record_to(path: str | os.PathLike[str], context: AgentContext, config: AgentLoopConfig,
              **options: Any) -> TranscriptRecorder:
    """``TranscriptRecorder(path, context, config, **options)``: reads well in a call."""
    return TranscriptRecorder(path, context, config, **options)
