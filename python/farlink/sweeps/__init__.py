"""Sweeps: many scenario x seed runs, checked before they start, kept as Parquet."""
