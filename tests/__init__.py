"""The tests of agentcore-fx, a package so that every test module has a full name
(``tests.core.test_machine_edges``) and the shared helpers import as ``tests.support``."""
