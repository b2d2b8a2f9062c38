"""OpenTelemetry traces of agent runs, following the GenAI semantic conventions.

Install the extra (``pip install 'agentcore-fx[otel]'``, which brings ``opentelemetry-api``), set
up an OpenTelemetry SDK the usual way, and give a :class:`TracingObserver` to any interpreter::

    from interpreters.otel import TracingObserver
    run_agent_loop("hi", context, config, emit, journal=TracingObserver(agent_name="helper"))

``import interpreters`` never imports OpenTelemetry; only ``import interpreters.otel`` does.

Theory of operation
-------------------

The observer is a journal: the driver calls :meth:`TracingObserver.record` after every step of
the core with the input it fed and the effects the core asked for. Every span boundary is one of
those facts or commands, so the observer needs no hook into the interpreters:

=========================================  ===============================================
what the step shows                        span work
=========================================  ===============================================
input ``Started`` / ``Continued``          open ``invoke_agent [name]`` (the run)
``Emit(TurnStartEvent)``                   open ``turn {n}`` under the run
effect ``CallLlm``                         open ``chat {model}`` under the turn
``Emit(MessageEndEvent)`` of the reply     close the chat span: usage, finish reason, status
                                           (this covers ``done``, ``error``, ``StreamFailed``
                                           and an abort, which all end with that event)
effect ``ExecuteTool``                     open ``execute_tool {name}`` under the turn
input ``ToolFinished`` / ``ToolFailed``    note the tool's end time (and the exception)
``Emit(ToolExecutionEndEvent)``            close the tool span, ERROR when ``is_error``
``Emit(TurnEndEvent)``                     close the turn
effect ``RunEnded``                        close whatever is still open, then the run
=========================================  ===============================================

Span times are the OpenTelemetry clock (``time.time_ns()``) when the step was recorded, so spans
measure the interpreter's wall time. Stream deltas are the hot path: a step whose input is a
stream event other than the final one returns after two type checks.

The interpreters enter :meth:`TracingObserver.tool_scope` around each tool execution, in the
thread or task that runs the tool; it makes the ``execute_tool`` span current there, so spans
the tool creates itself (an HTTP client's, a database's) become its children.

One observer follows one run at a time (it can be reused for the next run once ``RunEnded`` was
recorded); give concurrent runs an observer each (they are cheap: the tracer is looked up once
per provider).
"""

from .attributes import SCHEMA_URL, SEMCONV_VERSION, input_messages, output_messages, provider_name
from .observer import TracingObserver

__all__ = [
    "SEMCONV_VERSION",
    "SCHEMA_URL",
    "TracingObserver",
    "input_messages",
    "output_messages",
    "provider_name",
]
