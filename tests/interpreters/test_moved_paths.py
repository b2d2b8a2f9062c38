"""The module paths of 0.5.0 keep working for a release (``interpreters.moved``): the same
module objects as at the new paths, a ``DeprecationWarning`` naming the new path, nothing loaded
twice. Checked in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import importlib
import json
import pickle
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interpreters.cli.common import load_tools
from interpreters.moved import MOVED, new_name
from interpreters.runtime.clock import now_ms
from interpreters.runtime.gc_pause import paused_gc
from interpreters.streams.http import RetryPolicy
from interpreters.streams.scripted import Reply, ScriptedCall
from tests.support.scripts import script_env

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


def warning(old: str) -> str:
    return f"{old} moved to {MOVED[old] if old in MOVED else new_name(old)} in agentcore-fx 0.6.0: import it from there"


def run_body(tmp_path: Path, source: str) -> Any:
    """``source`` run as the file ``body.py`` in a fresh interpreter, every warning recorded: what
    it left in ``RESULT``, and its warnings as ``[category, message, file name, line]``."""
    (tmp_path / "body.py").write_text(textwrap.dedent(source))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json, pathlib, warnings
        body = pathlib.Path("body.py").read_text()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(body, "body.py", "exec"))
        print(json.dumps([RESULT, [[w.category.__name__, str(w.message), w.filename, w.lineno] for w in caught]]))
    """)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=script_env())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_an_old_module_is_still_an_attribute_of_the_package(tmp_path: Path) -> None:
    """0.5.0's ``import interpreters`` made ``interpreters.scripted``, ``.clock`` and ``.driver``
    attributes (the package imported them): ``interpreters.scripted.Reply`` still works, and so
    does every other old path given as an attribute."""
    result, caught = run_body(tmp_path, """\
        import importlib
        import interpreters
        names = ["scripted", "clock", "driver", "gc_pause", "http", "demo", "resuming"]
        found = [getattr(interpreters, name) for name in names]
        RESULT = [module is importlib.import_module(interpreters.moved.MOVED["interpreters." + name])
                  for name, module in zip(names, found)]
        RESULT.append(interpreters.scripted.Reply is importlib.import_module("interpreters.streams.scripted").Reply)
        """)
    assert result == [True] * 8
    assert caught == [["DeprecationWarning", warning(f"interpreters.{name}"), "body.py", 4]
                      for name in ["scripted", "clock", "driver", "gc_pause", "http", "demo", "resuming"]]


def test_the_warning_points_at_the_line_that_used_the_old_path_once(tmp_path: Path) -> None:
    result, caught = run_body(tmp_path, """\
        import importlib
        import interpreters.http.sync
        from interpreters import clock
        demo = importlib.import_module("interpreters.demo")
        import interpreters
        gc_pause = interpreters.gc_pause
        from interpreters.scripted import Reply
        import interpreters.http.sync, interpreters.clock, interpreters.demo, interpreters.gc_pause
        from interpreters.scripted import tool_call
        RESULT = [clock.__name__, demo.__name__, gc_pause.__name__, Reply.__module__]
        """)
    assert result == ["interpreters.runtime.clock", "interpreters.cli.demo", "interpreters.runtime.gc_pause",
                      "interpreters.streams.scripted"]
    assert caught == [
        ["DeprecationWarning", warning("interpreters.http"), "body.py", 2],
        ["DeprecationWarning", warning("interpreters.http.sync"), "body.py", 2],
        ["DeprecationWarning", warning("interpreters.clock"), "body.py", 3],
        ["DeprecationWarning", warning("interpreters.demo"), "body.py", 4],
        ["DeprecationWarning", warning("interpreters.gc_pause"), "body.py", 6],
        ["DeprecationWarning", warning("interpreters.scripted"), "body.py", 7],
    ]  # lines 8 and 9 use paths imported already: no second warning


def test_the_library_itself_uses_no_old_path(tmp_path: Path) -> None:
    result, caught = run_body(tmp_path, """\
        import importlib, pkgutil
        import agentcore, interpreters
        RESULT = []
        for package in (agentcore, interpreters):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if not info.name.endswith(".__main__"):  # importing it runs the command line
                    importlib.import_module(info.name)
                    RESULT.append(info.name)
        """)
    assert caught == []
    assert {"interpreters.streams.recorded", "interpreters.cli.demo", "interpreters.replay.recovery"} <= set(result)
    assert not set(MOVED) & set(result)


@pytest.mark.usefixtures("old_paths_quiet")
def test_a_submodule_of_a_moved_package_is_loaded_once_under_pytest() -> None:
    """In this process pytest's import hook is on ``sys.meta_path`` too: the old path still
    gives the module already loaded, not the file run again."""
    import interpreters.streams.http
    import interpreters.streams.http.session

    old = importlib.import_module("interpreters.http.session")
    assert old is interpreters.streams.http.session is sys.modules["interpreters.http.session"]
    assert old.RetryPolicy is interpreters.streams.http.RetryPolicy


@pytest.mark.usefixtures("old_paths_quiet")
def test_isinstance_and_monkeypatching_through_an_old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import interpreters.runtime.clock
    import interpreters.streams.http.sync

    old = importlib.import_module("interpreters.scripted")
    assert isinstance(Reply("x"), old.Reply) and isinstance(old.Reply("x"), Reply)
    monkeypatch.setattr("interpreters.clock.now_ms", lambda: 42)
    assert interpreters.runtime.clock.now_ms() == 42
    monkeypatch.setattr("interpreters.http.sync.default_streamer", lambda: "patched")
    assert interpreters.streams.http.sync.default_streamer() == "patched"


PICKLED = [Reply("x", tool_calls=[("add", {"a": 1}, "c1")]), ScriptedCall("add", {"a": 1}, "c1"),
           RetryPolicy(max_retries=2), now_ms, paused_gc]


@pytest.mark.usefixtures("old_paths_quiet")
@pytest.mark.parametrize("value", PICKLED, ids=lambda v: getattr(v, "__name__", type(v).__name__))
def test_a_pickle_names_the_new_module_and_one_naming_the_old_module_loads(value: Any) -> None:
    module = value.__module__ if callable(value) and not isinstance(value, type) else type(value).__module__
    old = {new: old for old, new in MOVED.items()}.get(module) or \
        {new: old for old, new in MOVED.items()}[module.rsplit(".", 1)[0]] + "." + module.rsplit(".", 1)[1]
    assert new_name(old) == module
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(value, protocol=protocol)
        assert module.encode() in data and pickle.loads(data) == value
    for protocol in (0, 1, 2, 3):  # the module is named by a line of text in these protocols
        data = pickle.dumps(value, protocol=protocol)
        loaded = pickle.loads(data.replace(f"{module}\n".encode(), f"{old}\n".encode()))
        assert loaded == value and type(loaded) is type(value)


@pytest.mark.usefixtures("old_paths_quiet")
def test_the_cli_takes_tools_from_the_old_demo_path() -> None:
    assert load_tools("interpreters.demo") == load_tools("interpreters.cli.demo")
    assert load_tools("interpreters.demo:convert_units") == load_tools("interpreters.cli.demo:convert_units")


@pytest.fixture
def old_paths_quiet() -> Iterator[None]:
    """The old paths' warnings ignored (this process may have given them already, or not), and
    the old paths the test imported forgotten after it: the next import of one warns again, as
    in a fresh process (the doctest of ``interpreters.moved`` counts on it)."""
    import interpreters

    before = set(sys.modules)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield
    for name in set(sys.modules) - before:
        if new_name(name) is not None:
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent == "interpreters":  # the import system made the module an attribute there
                vars(interpreters).pop(child, None)
