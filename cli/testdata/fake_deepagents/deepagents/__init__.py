"""A stand-in for the deepagents package (0.7 layout) with our own placeholder text, for dageval's import tests."""

__version__ = "0.7.8"
