"""The ``farlink`` command: one module per command group, parsing options only."""
