"""Pieces every layer uses: the error types, a bounded LRU cache, TOML config reading, the shipped data folder."""
