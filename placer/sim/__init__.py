"""The discrete-event cluster simulator: jobs and decisions, the waiting queue, the event loop,
the options a policy may pick from, a whole-stream rollout and its metrics. Knows nothing about RL.
"""
