"""The engine both interpreters share, one job a module: the run (:mod:`~interpreters.runtime.run`:
the walk of the core's effects), its steps and observers (:mod:`~interpreters.runtime.journal`),
model and tool calls (:mod:`~interpreters.runtime.calls`), hook calls
(:mod:`~interpreters.runtime.hooks`), the checks of what users hand in
(:mod:`~interpreters.runtime.checks`), the API key (:mod:`~interpreters.runtime.keys`), the
deadlines (:mod:`~interpreters.runtime.deadlines`), the clock and the pause of the cyclic garbage
collector; and the two runners that carry the I/O out (:mod:`~interpreters.runtime.threads`,
:mod:`~interpreters.runtime.tasks`)."""
