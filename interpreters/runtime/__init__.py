"""The engine both interpreters share: the run (:mod:`~interpreters.runtime.driver`: the walk of
the core's effects, the observers, the checks of what users hand in, the hook and tool calls),
the clock (:mod:`~interpreters.runtime.clock`) and the pause of the cyclic garbage collector
while many long-lived objects are built (:mod:`~interpreters.runtime.gc_pause`). The front doors
(:mod:`interpreters.sync`, :mod:`interpreters.aio`) carry the I/O out."""
