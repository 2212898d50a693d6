"""A study's tickets as tables: one row per ticket (``history()``) and one row per arm (``arms()``).

Both are read from the replayed :class:`~.tickets.TicketRecord` values alone (and, for the arms, the driver's
recommended set and arm states), so they append nothing; their words are the plain values of :mod:`.states`.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from .states import ArmState, TicketState
from .tickets import ticket_of

if TYPE_CHECKING:
    import pandas as pd


def history_frame(spec, records) -> pd.DataFrame:
    """One row per ticket (a pandas DataFrame).

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      records: the tickets' records, in the order they were made.

    Returns:
      Columns ``ticket``, ``state`` (``queued``, ``pending``, ``told``, ``failed``, ``abandoned``), ``worker``,
      ``arm`` (a slate's arms joined by commas), one column per objective (a slate's: a JSON list, one value per
      arm), ``cost``, ``asked`` and ``told`` (UTC times), ``source`` (``asked``; ``enqueued``; ``added``: a finished
      evaluation added), then one column ``attrs.KEY`` per attribute told with any ticket (empty where a ticket has
      none).
    """
    import pandas as pd

    records = list(records)
    rows = []
    for rec in records:
        t = ticket_of(spec, rec)
        row = dict(ticket=rec.id, state=rec.state.value, worker=rec.worker,
                   arm=t.arm if t.slate is None else ",".join(t.slate))
        vals = rec.values
        for j, o in enumerate(spec.objectives):
            row[o] = None if vals is None else vals[j] if t.slate is None else json.dumps([r[j] for r in vals])
        row["cost"], row["asked"], row["told"], row["source"] = rec.cost, rec.asked, rec.told, rec.source.value
        row.update({f"attrs.{k}": v for k, v in (rec.attrs or {}).items()})
        rows.append(row)
    keys = list(dict.fromkeys(k for rec in records for k in (rec.attrs or {})))
    cols = ["ticket", "state", "worker", "arm", *spec.objectives, "cost", "asked", "told", "source",
            *[f"attrs.{k}" for k in keys]]
    frame = pd.DataFrame(rows, columns=cols)
    for c in ("asked", "told"):
        frame[c] = pd.to_datetime(frame[c], unit="s", utc=True)
    return frame


def told_values(spec, records) -> tuple:
    """Each arm's told values and its share of the told costs.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      records: the tickets' records.

    Returns:
      ``(values, costs)``: per arm, a list of its told value rows and a list of its cost shares (a slate's cost
      shared equally by its arms; none where a ticket was told no cost).
    """
    K, d = len(spec.arms), len(spec.objectives)
    values, costs = [[] for _ in range(K)], [[] for _ in range(K)]
    for rec in records:
        if rec.state != TicketState.TOLD:
            continue
        arms = np.atleast_1d(rec.action)
        rows = np.reshape(np.asarray(rec.values, float), (len(arms), d))
        for a, row in zip(arms, rows, strict=True):
            values[a].append(row)
            if rec.cost is not None:
                costs[a].append(rec.cost / len(arms))
    return values, costs


def arms_frame(spec, records, recommended, states) -> pd.DataFrame:
    """One row per arm (a pandas DataFrame): what was told of it and where it stands.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      records: the tickets' records.
      recommended: the driver's recommended mask.
      states: the driver's :class:`~.states.ArmState` of each arm.

    Returns:
      Columns ``arm``; ``pulls`` (values told); for each objective ``NAME``, ``NAME_low`` and ``NAME_high``: the
      mean of the told values and its 95% Student t interval (``mean -/+ t_{0.975, n - 1} s / sqrt(n)``, ``s`` the
      sample standard deviation of the ``n`` told values; NaN bounds with one value, NaN mean with none), in the
      user's units; ``cost``: the mean told cost (NaN if none was told); ``recommended``; ``state``: the driver's
      state, or ``unevaluated`` for an arm never told a value. In the spec's arm order.
    """
    import pandas as pd
    from scipy import stats

    d = len(spec.objectives)
    values, costs = told_values(spec, records)
    out = []
    for i, name in enumerate(spec.arms):
        v = np.reshape(np.asarray(values[i], float), (-1, d))
        n = len(v)
        mean = v.mean(0) if n else np.full(d, np.nan)
        half = (stats.t.ppf(0.975, n - 1) * v.std(0, ddof=1) / np.sqrt(n)) if n > 1 else np.full(d, np.nan)
        row = dict(arm=name, pulls=n)
        for j, o in enumerate(spec.objectives):
            row[o], row[f"{o}_low"], row[f"{o}_high"] = mean[j], mean[j] - half[j], mean[j] + half[j]
        row["cost"] = float(np.mean(costs[i])) if costs[i] else np.nan
        row["recommended"] = bool(recommended[i])
        row["state"] = str(ArmState.UNEVALUATED if n == 0 else states[i])
        out.append(row)
    cols = ["arm", "pulls", *[c for o in spec.objectives for c in (o, f"{o}_low", f"{o}_high")], "cost",
            "recommended", "state"]
    return pd.DataFrame(out, columns=cols)


def evaluated(spec, records) -> np.ndarray:
    """Which arms were told a value.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      records: the tickets' records.

    Returns:
      A boolean mask over the arms.
    """
    told = np.zeros(len(spec.arms), bool)
    for rec in records:
        if rec.state == TicketState.TOLD:
            told[np.atleast_1d(rec.action)] = True
    return told
