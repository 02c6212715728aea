"""The compiled engine: job streams run in numba, decided by rule-based :class:`Program` s (the heuristics'), with the
reference simulator's semantics (:mod:`placer.sim.simulator`). numba is imported when a stream first runs."""
