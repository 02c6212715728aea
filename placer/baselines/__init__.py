"""Policies without learning: heuristics, sampled-future lookahead, the clairvoyant (hindsight)
planner, the MILP bound, and the registry that builds any policy (plug-ins included) from its name.
"""
