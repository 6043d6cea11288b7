"""The result every engine returns: summary and traces, and its document schema."""
