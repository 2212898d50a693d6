"""CSV columns for the user-data environments (``kind = "table"`` and ``kind = "replay"``).

Reads a CSV (optionally gzip-compressed) with the standard library's ``csv`` module and converts
whole columns with numpy, so a 10 MB file loads in well under a second. Every bad value is one
error line naming the file, the column and the row: rows count the lines after the header from 1
(blank lines included, skipped when read), so row ``r`` is line ``r + 1`` of the file.

Objectives are means in [0, 1] as in the papers' problem statement (PDMOB, Section 2.2; Xue et al.,
Section 2). Raw scores are mapped there explicitly: ``normalize`` min-max scales columns to [0, 1],
``minimize`` marks lower-is-better columns (``1 - x`` for values already in [0, 1], ``(max - x) /
(max - min)`` when normalized). Costs are divided by their largest value, so they lie in (0, 1] and
the cost floor lambda is the smallest of them (Xue et al., Appendix A).
"""
from __future__ import annotations

import csv
import gzip
import io
import itertools
import math
import os
from dataclasses import dataclass

import numpy as np


def where(r: int) -> str:
    """``"row r (line r+1)"``: rows count the lines after the header line from 1."""
    return f"row {r} (line {r + 1})"


@dataclass(frozen=True)
class Columns:
    """A CSV's header and its cells by column (strings), with the file's data-row numbers."""

    path: str
    header: tuple
    cells: dict  # column -> list of str, one per data row kept
    rows: np.ndarray  # (n,) data-row number of each kept row (1 = first line after the header)

    def __len__(self) -> int:
        return len(self.rows)

    def text(self, col: str) -> list:
        """The stripped cells of ``col``."""
        return list(map(str.strip, self.cells[col]))

    def numbers(self, col: str, allow_empty: bool = False) -> np.ndarray:
        """Column ``col`` as float64; a non-numeric, NaN or infinite cell is an error naming its row.

        With ``allow_empty``, empty cells become NaN (the caller decides what they mean).
        """
        raw = self.cells[col]
        try:
            v = np.array(raw, dtype=np.float64)
        except ValueError:
            v = np.empty(len(raw))
            for i, s in enumerate(raw):
                try:
                    v[i] = float(s)
                except ValueError:
                    if allow_empty and not s.strip():
                        v[i] = math.nan
                        continue
                    raise ValueError(f"{self.path}: column {col!r}, {where(int(self.rows[i]))}: "
                                     f"{s!r} is not a number") from None
        bad = ~np.isfinite(v)
        if allow_empty:
            bad &= np.array([bool(s.strip()) for s in raw]) if bad.any() else bad
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{self.path}: column {col!r}, {where(int(self.rows[i]))}: value {raw[i].strip()!r} is "
                             f"{'NaN' if np.isnan(v[i]) else 'infinite'}; only finite numbers are allowed")
        return v


def resolve_path(path, key: str = "env.path") -> str:
    """Check that a data file exists (a relative path was anchored at the spec's folder by the loader)."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ValueError(f"{key} = {path!r} must be the path of a CSV file")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{key}: data file {path!r} does not exist (a relative path is relative to the spec file)")
    return path


def _plain_fields(text: str):
    """``(header, columns)`` of a CSV without quotes, blank lines or ragged rows (one split in C); else None."""
    text = text.replace("\r\n", "\n")
    if '"' in text or "\r" in text:
        return None
    head, _, body = text.partition("\n")
    header = head.split(",")
    width = len(header)
    body = body[:-1] if body.endswith("\n") else body
    if not body:
        return header, [[] for _ in header]
    lines = body.split("\n")
    if set(map(str.count, lines, itertools.repeat(","))) != {width - 1}:
        return None  # blank or ragged lines: the csv module reads them and names the row
    fields = body.replace("\n", ",").split(",")
    return header, [fields[j::width] for j in range(width)]


def _csv_fields(path: str, text: str):
    """``(header, columns, data-row numbers)`` by the csv module: quotes, blank lines skipped, ragged rows named."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    lines = list(reader)
    keep = [i for i, row in enumerate(lines) if row]  # blank lines are skipped, row numbers kept
    if len(keep) != len(lines):
        lines = [lines[i] for i in keep]
    width = len(header)
    short = next((i for i, row in enumerate(lines) if len(row) != width), None)
    if short is not None:
        raise ValueError(f"{path}: {where(keep[short] + 1)} has {len(lines[short])} fields, the header has {width}")
    return header, [[row[j] for row in lines] for j in range(width)], np.asarray(keep, np.int64) + 1


def read(path, needed: dict) -> Columns:
    """Read ``path``; ``needed`` maps each column it must have to the spec key naming it."""
    path = resolve_path(path)
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as fh:
            text = fh.read()
        plain = _plain_fields(text)
        if plain is not None:
            header, cols = plain
            rows = np.arange(1, len(cols[0]) + 1) if cols else np.zeros(0, np.int64)
        else:
            header, cols, rows = _csv_fields(path, text)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{path}: cannot be read as CSV text: {err}") from None
    header = tuple(h.strip() for h in header)
    missing = [col for col in needed if col not in header]
    if missing:
        keys = ", ".join(dict.fromkeys(needed[col] for col in missing))
        raise ValueError(f"{path}: missing column(s) {missing} (named by {keys}); "
                         f"the header (line 1) has {list(header)}")
    index = {h: n for n, h in enumerate(header)}
    return Columns(path, header, {col: cols[index[col]] for col in needed}, rows)


def _names(value, objectives, key: str) -> list:
    """``true`` / ``false`` / a list of objective names -> the listed objective names."""
    if isinstance(value, bool):
        return list(objectives) if value else []
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ValueError(f"{key} = {value!r} must be true, false or a list of objective column names")
    unknown = [c for c in value if c not in objectives]
    if unknown:
        raise ValueError(f"{key} names {unknown}, which are not objectives; objectives: {list(objectives)}")
    return list(value)


def objective_matrix(cols: Columns, objectives, normalize=False, minimize=(), allow_empty: bool = False):
    """``(n, d)`` objective values in [0, 1] after the ``normalize`` / ``minimize`` options.

    Without normalization a value outside [0, 1] is an error naming its column and row. With
    ``allow_empty`` empty cells stay NaN (ignored by the min-max range).
    """
    norm = _names(normalize, objectives, "env.normalize")
    low = _names(minimize, objectives, "env.minimize")
    out = np.empty((len(cols), len(objectives)))
    for j, col in enumerate(objectives):
        v = cols.numbers(col, allow_empty)
        if col in norm:
            lo, hi = np.nanmin(v), np.nanmax(v)
            if not hi > lo:
                raise ValueError(f"{cols.path}: column {col!r} is constant ({lo}); min-max normalisation "
                                 "(env.normalize) needs two distinct values")
            v = (hi - v) / (hi - lo) if col in low else (v - lo) / (hi - lo)
        else:
            bad = np.flatnonzero((v < 0) | (v > 1))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"{cols.path}: column {col!r}, {where(int(cols.rows[i]))}: value {v[i]} is outside "
                                 f"[0, 1]; scale it or set env.normalize = true (or a list of columns)")
            if col in low:
                v = 1.0 - v
        out[:, j] = v
    return out


def normalized_costs(cols: Columns, col: str, keep=None) -> np.ndarray:
    """Column ``col`` (rows ``keep``, default all) divided by its largest value; an empty cell or a cost of
    zero or below is an error naming its row."""
    keep = np.arange(len(cols)) if keep is None else np.flatnonzero(keep)
    c = cols.numbers(col, allow_empty=True)[keep]
    bad = np.flatnonzero(~(c > 0))
    if bad.size:
        i = int(bad[0])
        what = "is empty" if np.isnan(c[i]) else f"{c[i]} must be > 0"
        raise ValueError(f"{cols.path}: column {col!r}, {where(int(cols.rows[keep[i]]))}: cost {what}")
    return c / c.max()


def objective_names(section: dict) -> list:
    """``env.objectives``: a non-empty list of distinct column names."""
    obj = section.get("objectives")
    if not isinstance(obj, list) or not obj or not all(isinstance(c, str) and c for c in obj):
        raise ValueError(f"env.objectives = {obj!r} must be a non-empty list of column names")
    if len(set(obj)) != len(obj):
        raise ValueError(f"env.objectives = {obj!r} lists a column twice")
    return obj


def column_name(section: dict, key: str, required: bool = True):
    """A string-valued key naming a column (``env.arm``, ``env.cost``, ...)."""
    value = section.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"env.{key} = {value!r} must be the name of a CSV column")
    return value
