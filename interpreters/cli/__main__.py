"""``python -m interpreters.cli``: the ``agentcore`` command."""

from .command import main

__all__: list[str] = []

raise SystemExit(main())
