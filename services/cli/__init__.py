"""The ``ballast`` command line."""
