"""The pure checks of a resume (``agentcore.resumption``) agree with the interpreters."""

from __future__ import annotations

import warnings

import agentcore.resumption
import interpreters.secrets


def test_the_core_refuses_the_same_redaction_marker_the_interpreters_write() -> None:
    assert agentcore.resumption.REDACTED == interpreters.secrets.REDACTED


def test_the_old_driver_module_still_gives_every_name_it_had() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from interpreters.runtime import driver
    from interpreters.runtime.journal import Journal
    from interpreters.runtime.run import AnswerOrder, Run

    assert (driver.Journal, driver.Run, driver.AnswerOrder) == (Journal, Run, AnswerOrder)
    assert driver.suspended_state is agentcore.resumption.suspended_state
    assert all(hasattr(driver, name) for name in driver.__all__)
