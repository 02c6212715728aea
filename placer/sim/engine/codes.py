"""The compiled engine's codes: statuses, event kinds, programs, outcomes and state slots (plain ints, no numba).

The kernels read them as compile-time constants, and numba's cache beside the package keys a kernel by its own file:
add codes, but changing one a kernel already reads leaves that kernel's cached compile stale until its file changes.
"""

# -- status of a run ------------------------------------------------------------------------------------------------
DONE, NEED, GROW, ASK, APPLIED, LOGGED = 0, 1, 2, 3, 4, 5
# finished; prices wanted (need_g, need_s); the shape table is full (grow it); a job waits for the caller's decision
# (an EXTERNAL program: answer in the work arrays, S_ANSWERED set); the answer was carried out (S_STOP set: the caller
# steps one decision at a time); the log of screened offers is full (read it: Arrays.log)
# -- event kinds (the reference's priorities) -----------------------------------------------------------------------
COMPLETION, ARRIVAL, EXPIRY = 0, 1, 2
# -- decision programs ----------------------------------------------------------------------------------------------
PARA_MAX, PARA_MIN, FIXED, EFFICIENT, LEAN, SWITCH, EXTERNAL = 0, 1, 2, 3, 4, 5, 6  # EXTERNAL: the caller decides
FIRST_FIT, BEST_FIT, SPREAD = 0, 1, 2
# program ints: kind, max_degree, cap (0: none), fixed degree, n_rules, rules[0..2], screen (EXTERNAL: 0 none)
P_KIND, P_MAX_DEGREE, P_CAP, P_FIXED, P_NRULES, P_RULES = 0, 1, 2, 3, 4, 5
P_SCREEN = P_RULES + 3
P_INTS = P_SCREEN + 1
# program floats: efficiency, quiet_free, admit (<0: none), admit_free, tie
Q_EFF, Q_QUIET, Q_ADMIT, Q_ADMIT_FREE, Q_TIE = 0, 1, 2, 3, 4
# -- outcomes and reasons (BlockReason's order) ---------------------------------------------------------------------
ACCEPTED, BLOCKED = 0, 1
REJECTED, NO_CAPACITY, OUT_OF_MEMORY, DEADLINE, QUEUE_FULL, EXPIRED = 0, 1, 2, 3, 4, 5
# -- integer state --------------------------------------------------------------------------------------------------
S_HEAP, S_SEQ, S_NEXT, S_ARRIVAL_QUEUED, S_PENDING, S_NWAIT, S_NOFFERS, S_OFFER_AT = 0, 1, 2, 3, 4, 5, 6, 7
S_NREC, S_NTL, S_NSIZES, S_NNEED, S_NSHAPES, S_PHASE, S_NFREE = 8, 9, 10, 11, 12, 13, 14
S_VERSION = 15  # bumped whenever a device frees or is taken: an option table's structure holds within one
S_ANSWERED, S_NRUNNING, S_STOP = 16, 17, 18  # the caller's answer waits in ext (EXTERNAL); jobs running
N_STATE = 20  # the last slot holds the cluster's number of devices
F_NOW = 0
TOLERANCE = 1e-9  # placer.sim.types.DEADLINE_TOLERANCE
KEY_BITS = 60  # bits of a shape key word: a partition of d devices takes d + parts <= 2d bits
KEY_WORDS = 3
MAX_KEY_DEGREE = KEY_WORDS * KEY_BITS // 2
