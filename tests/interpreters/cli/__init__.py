"""Tests of the ``agentcore`` command."""
