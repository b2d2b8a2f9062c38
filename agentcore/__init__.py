"""agentcore: the agent loop as a pure state machine (filled in below)."""
