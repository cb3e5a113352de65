"""The simulator's pending-job record, shared by the event loop (``engine``) and the backfill
strategies (``backfill``).

Pending records are tuples, sorted ascending, so the highest priority comes first:
  (negkey, submit, jid, nodes, limit, run, user, dep, static)
negkey = -(static - w_age * submit / max_age): the order of jobs by Slurm priority does not
change with time while no job's age has reached max_age, so the queue stays sorted by insort.
"""

from __future__ import annotations

R_NEGKEY, R_SUBMIT, R_JID, R_NODES, R_LIMIT, R_RUN, R_USER, R_DEP, R_STATIC = range(9)
