"""Deprecated: the names of the old driver module, which was split by job in 0.6.0 (kept until 0.7).

``interpreters.driver`` (0.5) and this module re-export them from where they live now:
:mod:`~interpreters.runtime.journal` (``Driver``, ``Journal``, ``InterpreterError``),
:mod:`~interpreters.runtime.run` (``Run``, ``AnswerOrder``), :mod:`~interpreters.runtime.calls`
(``ModelCall``, ``ToolRun``), :mod:`~interpreters.runtime.hooks`, :mod:`~interpreters.runtime.checks`
and :mod:`agentcore.resumption`. Import them from there.
"""

from agentcore.records import is_message
from agentcore.resumption import checked_suspension, resumed_input, suspended_state, with_config_model

from .calls import NO_STREAM_FN, ModelCall, ToolRun, stream_options, stream_start_timeout_text
from .checks import check_run_arguments, polled_messages, prompt_messages, tool_registry
from .hooks import FATAL, HookCall, KeyLookup, Returned, deliver, failure_text, hook_call, with_signal
from .journal import Driver, InterpreterError, Journal, Journals, observers, tool_scopes
from .run import AS_THEY_ARRIVE, END, WAIT, WAKE, AnswerOrder, Run

__all__ = [
    "AS_THEY_ARRIVE", "END", "FATAL", "NO_STREAM_FN", "WAIT", "WAKE", "AnswerOrder", "Driver", "HookCall",
    "InterpreterError", "Journal", "Journals", "KeyLookup", "ModelCall", "Returned", "Run", "ToolRun",
    "check_run_arguments", "checked_suspension", "deliver", "failure_text", "hook_call", "is_message", "observers",
    "polled_messages", "prompt_messages", "resumed_input", "stream_options", "stream_start_timeout_text",
    "suspended_state", "tool_registry", "tool_scopes", "with_config_model", "with_signal",
]
