"""The ``ballast`` commands, one module per concern; ``services/cli/main.py`` wires them into the root app."""
