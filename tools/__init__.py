"""Tools of the repository (run from its root, never installed): ``python -m tools.figures``."""
