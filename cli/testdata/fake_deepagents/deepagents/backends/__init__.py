class StateBackend:
    """Placeholder for Deep Agents' state backend."""
