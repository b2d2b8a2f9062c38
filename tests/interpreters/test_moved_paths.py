"""The module paths of 0.5.0 keep working for a release (``interpreters.moved``): the same
module objects as at the new paths, a ``DeprecationWarning`` naming the new path, nothing loaded
twice. Checked in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from interpreters.moved import MOVED, new_name
from interpreters.streams.scripted import Reply

ROOT = Path(__file__).parents[2]


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_each_old_path_is_the_module_at_its_new_path_and_says_where_it_went(old: str) -> None:
    new = MOVED[old]
    proc = fresh(f"""
        import sys, importlib
        old = importlib.import_module({old!r})
        new = importlib.import_module({new!r})
        print(old is new, sys.modules[{old!r}] is new, new.__name__, new.__spec__.name)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"True True {new} {new}\n"
    assert f"DeprecationWarning: {old} moved to {new} in agentcore-fx 0.6.0: import it from there" in proc.stderr


def test_the_from_import_forms_and_submodules_of_a_moved_package() -> None:
    proc = fresh("""
        from interpreters.scripted import Reply
        from interpreters.http.sync import HttpStreamer
        import interpreters.http.session
        import interpreters.streams.http.sync as sync_now, interpreters.streams.scripted as scripted_now
        import interpreters.streams.http.session as session_now
        print(Reply is scripted_now.Reply, HttpStreamer is sync_now.HttpStreamer,
              interpreters.http.session is session_now)
        import sys
        print(sorted(m for m in sys.modules if m.endswith("http.sync")))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["True True True",
                                        "['interpreters.http.sync', 'interpreters.streams.http.sync']"]


def test_an_object_pickled_under_an_old_path_loads_as_the_class_at_the_new_one() -> None:
    # Protocol 0 names the class's module as a line of text: as 0.5.0 wrote it.
    old = pickle.dumps(Reply(text="hi"), protocol=0).replace(b"interpreters.streams.scripted\n",
                                                             b"interpreters.scripted\n")
    assert b"interpreters.scripted" in old
    with pytest.warns(DeprecationWarning, match="interpreters.scripted moved to interpreters.streams.scripted"):
        sys.modules.pop("interpreters.scripted", None)
        back = pickle.loads(old)
    assert type(back) is Reply and back.text == "hi"


def test_names_that_did_not_move_are_left_to_the_import_system() -> None:
    assert new_name("interpreters.sync") is None and new_name("interpreters.scriptedx") is None
    assert new_name("interpreters.http") == "interpreters.streams.http"
    with pytest.raises(ModuleNotFoundError):
        __import__("interpreters.scripted.nothing_here")
