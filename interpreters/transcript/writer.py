"""One writer per transcript: the file a recorder writes, claimed for it alone.

A transcript is the journal of one run, written by one recorder. Two writers on one file would
splice two runs into it (or truncate one under the other): one of them is lost. So a recorder
*claims* its file before it truncates or writes anything (:meth:`TranscriptFile.claim`), and a
second claim, while the first one holds, is refused with :class:`TranscriptBusy`, naming the
path and the other writer. Two exclusions make one rule:

- **In this process**, a registry of the files claimed, keyed by the file's identity
  (``st_dev``, ``st_ino``: the same file whatever path names it), refuses a second claim from
  any thread. A POSIX record lock (``lockf``) could not: it belongs to the process, so a second
  thread, or a second recorder of the same thread, would get it too.
- **Between processes**, an ``flock`` lock on the claim's own open file. Unlike a POSIX record
  lock, it is not dropped when the process closes *another* descriptor of the file (a viewer
  reading the transcript, ``read_transcript`` in the writing process), and it goes with the
  process when the process dies. (On file systems where ``flock`` is not available the claim
  falls back to ``lockf``; on NFS, Linux emulates ``flock`` with record locks, which a read of
  the file through another descriptor in the writing process releases: read a transcript
  being written from another process there.)

A claim is released by :meth:`TranscriptFile.close` (the recorder closes it when its run ends,
suspends, or its stream is closed). What a resume needs is read through the claimed file itself
(:meth:`TranscriptFile.read`): the bytes checked are the bytes appended to, with no moment
between reading and writing in which another writer could go first.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path
from typing import Any, Final

__all__ = ["TranscriptBusy", "TranscriptFile"]


class TranscriptBusy(RuntimeError):
    """Another writer holds the transcript (another recorder in this process, or another
    process): nothing was truncated or written. ``path`` is the file and ``writer`` says who
    holds it (``"another recorder in this process (thread 'name')"`` or ``"another process"``)."""

    def __init__(self, message: str, path: Path, writer: str) -> None:
        super().__init__(message)
        self.path = path
        self.writer = writer

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from all three (the default gives __init__ the message alone): the error
        # reaches a caller in another process (a process pool, Ray) as it was raised.
        return type(self), (self.args[0], self.path, self.writer), self.__dict__


_claimed: dict[tuple[int, int], str] = {}
"""The transcripts this process writes: (st_dev, st_ino) → the name of the thread that claimed it."""
_claims_lock = threading.Lock()


def _forget_claims() -> None:
    """In a forked child: the parent's claims are not the child's (its descriptors, inherited,
    still hold the parent's ``flock``, so a claim of the same file in the child is refused as
    another process's)."""
    global _claims_lock
    _claimed.clear()
    _claims_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_claims)

_BUSY: Final = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})


def _in_process(path: Path, thread: str) -> TranscriptBusy:
    writer = f"another recorder in this process (thread {thread!r})"
    return TranscriptBusy(f"{path}: another recorder in this process is writing this transcript (opened in thread "
                          f"{thread!r}); give each run its own path, or close that recorder first", path, writer)


def _in_another_process(path: Path) -> TranscriptBusy:
    return TranscriptBusy(f"{path}: another process is writing this transcript (a second worker, or pytest-xdist "
                          "running the same test twice?); give each run its own path", path, "another process")


def _lock(fd: int, path: Path) -> None:
    """The lock that excludes other processes (``flock``; ``lockf`` where the file system has no
    ``flock``); :class:`TranscriptBusy` when another process holds it."""
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: the in-process exclusion only
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except OSError as exc:
        if exc.errno in _BUSY:
            raise _in_another_process(path) from None
    try:  # a file system without flock
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise _in_another_process(path) from None


class TranscriptFile:
    """A transcript file claimed by this writer alone (see the module's docstring), opened for
    reading and writing, unbuffered. ``file`` is the open file; :meth:`close` releases the claim."""

    __slots__ = ("path", "file", "_key")

    def __init__(self, path: Path, file: io.FileIO, key: tuple[int, int]) -> None:
        self.path = path
        self.file = file
        self._key: tuple[int, int] | None = key

    @classmethod
    def claim(cls, path: str | os.PathLike[str], *, create: bool) -> TranscriptFile:
        """Open ``path`` (created when ``create``; else a missing file is ``FileNotFoundError``)
        and claim it: :class:`TranscriptBusy` when another recorder of this process, or another
        process, holds it. Nothing is truncated or written."""
        p = Path(path)
        fd = os.open(p, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            with _claims_lock:
                holder = _claimed.get(key)
                if holder is not None:
                    raise _in_process(p, holder)
                _claimed[key] = threading.current_thread().name
            try:
                _lock(fd, p)
                file = open(fd, "r+b", buffering=0)
            except BaseException:
                with _claims_lock:
                    _claimed.pop(key, None)
                raise
        except BaseException:
            os.close(fd)
            raise
        return cls(p, file, key)

    def fileno(self) -> int:
        return self.file.fileno()

    def read(self) -> bytes:
        """The whole file, read through this claim (what is appended to is what was read); the
        file is left at its end."""
        self.file.seek(0)
        return self.file.readall()

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes (a torn last line, say) and go to its end."""
        os.ftruncate(self.fileno(), size)
        self.file.seek(size)

    @property
    def closed(self) -> bool:
        return self._key is None

    def close(self) -> None:
        """Close the file and release the claim (the lock goes with the descriptor)."""
        key, self._key = self._key, None
        if key is None:
            return
        try:
            self.file.close()
        finally:
            with _claims_lock:
                _claimed.pop(key, None)

    def __del__(self) -> None:
        try:
            self.close()  # a claim dropped without close() does not keep its file claimed
        except Exception:
            pass
