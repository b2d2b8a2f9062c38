"""Helpers shared by the test suites: the interpreters side by side (:mod:`.flavours`), test
clocks, the provider corpus and a scripted HTTP server, sample tools, recorded and suspending
runs. Imported as ``from tests.support.flavours import ...``."""
