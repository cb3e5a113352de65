"""The reference's per-step state vector (42 numbers), computed from a simulator's queue.

Per 10-minute step: for the pending queue and for the running jobs each, the count, the total
nodes, and min/25/50/75/max of time limits, of waits so far and of elapsed run times (17 + 17);
then the predecessor's (limit, nodes, wait, elapsed) and the successor's (limit, nodes, 0, 0).
Empty lists give zeros. Times are in hours (the reference used minutes; the unit only rescales).
"""

from __future__ import annotations

import math

import numpy as np

from mirage.units import DAY_S, DECISION_STEP_S, HOUR_S

HISTORY_STEPS = DAY_S // DECISION_STEP_S  # 24 h at 10-minute steps: 144
QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)
_STATS = ("min", "q25", "q50", "q75", "max")


def _names() -> list[str]:
    names = []
    for group in ("pending", "running"):
        names += [f"{group}_count", f"{group}_nodes"]
        for what in ("limit_h", "wait_h", "elapsed_h"):
            names += [f"{group}_{what}_{s}" for s in _STATS]
    names += ["pred_limit_h", "pred_nodes", "pred_wait_h", "pred_elapsed_h"]
    names += ["succ_limit_h", "succ_nodes", "succ_wait_h", "succ_elapsed_h"]
    return names


STATE_NAMES: tuple[str, ...] = tuple(_names())
N_STATE = len(STATE_NAMES)
assert N_STATE == 42


def quantiles(values: list) -> list:
    """``np.quantile(values, QUANTILES)`` of a list of numbers without NaNs, bit for bit (numpy's
    default "linear" method: the same indices, the same interpolation, the same operations on
    the same doubles), in plain Python: on the short lists of a queue (tens to hundreds of
    jobs) that is a fraction of numpy's time, and the state of every step of every sample
    takes six of them."""
    s = sorted(values)
    last = len(s) - 1
    out = []
    for q in QUANTILES:
        virtual = last * q
        if virtual >= last:  # the maximum: numpy interpolates the last element with itself
            a = b = s[-1]
            gamma = virtual + 1
        else:
            prev = math.floor(virtual)
            gamma = virtual - prev
            a, b = s[prev], s[prev + 1]
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def _group(nodes: list, limit_h: list, wait_h: list, elapsed_h: list | None) -> list:
    """count, total nodes, and the quantiles of limits, waits and elapsed times (None: all 0)."""
    columns = [limit_h, wait_h] + ([] if elapsed_h is None else [elapsed_h])
    out = [len(nodes), sum(nodes)]
    if any(math.isnan(sum(c)) for c in columns):  # numpy's NaN rules, as before
        out += np.quantile(np.asarray(columns, dtype=np.float64), QUANTILES, axis=1).T.ravel().tolist()
    else:
        for c in columns:
            out += quantiles(c)
    return out + ([0.0] * 5 if elapsed_h is None else [])


def state_vector(now: int, pending, running, pred=None, succ=None) -> np.ndarray:
    """42 numbers for time ``now`` (epoch s).

    ``pending``: rows (submit, nodes, limit_s); ``running``: rows (submit, start, nodes,
    limit_s): arrays, or sequences of tuples (the simulator's, which skip the array);
    ``pred``/``succ``: (limit_h, nodes, wait_h, elapsed_h), or None (zeros: not submitted).
    """
    out = np.zeros(N_STATE, dtype=np.float32)
    if len(pending):
        p = pending.tolist() if isinstance(pending, np.ndarray) else pending
        out[:17] = _group([r[1] for r in p], [r[2] / HOUR_S for r in p],
                          [(now - r[0]) / HOUR_S for r in p], None)
    if len(running):
        r = running.tolist() if isinstance(running, np.ndarray) else running
        out[17:34] = _group([x[2] for x in r], [x[3] / HOUR_S for x in r],
                            [(x[1] - x[0]) / HOUR_S for x in r], [(now - x[1]) / HOUR_S for x in r])
    if pred is not None:
        out[34:38] = pred
    if succ is not None:
        out[38:42] = succ
    return out
