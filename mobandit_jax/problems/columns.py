"""CSV columns for the user-data environments (``kind = "table"`` and ``kind = "replay"``).

Reads a CSV with the standard library's ``csv`` module and converts whole columns with numpy, so a
10 MB file loads in well under a second. Every bad input is one error line naming the file and the
line, column, row or value at fault: rows count the lines after the header from 1 (blank lines
included, skipped when read), so row ``r`` starts on line ``r + 1`` of the file. The rules:

* Text is UTF-8, with or without a byte-order mark; a UTF-16 or UTF-32 file with its byte-order
  mark is read too. Other bytes (latin-1, ...) are refused naming their byte offset and line; NUL
  characters are refused. Lines end in LF, CRLF or CR.
* Fields are separated by commas (a file that seems ';', tab, '|' or space separated is refused
  saying so), quoted fields may hold commas, quotes (``""``) and line breaks, a quote left open is
  an error. Every row has as many fields as the header.
* Compression is recognised by the first bytes: gzip, bzip2, xz, or a zip archive of one file. A
  name ending in ``.gz``, ``.bz2``, ``.xz`` or ``.zip`` must hold that compression.
* The header names each column a spec uses exactly once (other header cells may be blank or repeat).

Objectives are means in [0, 1] as in the papers' problem statement (PDMOB, Section 2.2; Xue et al.,
Section 2). Raw scores are mapped there explicitly: ``normalize`` min-max scales columns to [0, 1],
``minimize`` marks lower-is-better columns (``1 - x`` for values already in [0, 1], ``(max - x) /
(max - min)`` when normalized). Costs are divided by their largest value, so they lie in (0, 1] and
the cost floor lambda is the smallest of them (Xue et al., Appendix A).

References:
  - PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed
    Multi-Objective Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
  - Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
    Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import itertools
import lzma
import math
import os
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from ..errors import did_you_mean


def shown(value, width: int = 60) -> str:
    """``repr(value)``, cut after ``width`` characters (a cell of a damaged file can be long).

    Args:
      value: any value.
      width: most characters kept.

    Returns:
      The text, ``"..."`` appended where cut.
    """
    text = repr(value)
    return text if len(text) <= width else text[:width] + "..."


def where(r: int) -> str:
    """``"row r (line r+1)"``: rows count the lines after the header line from 1.

    Args:
      r: a data-row number.

    Returns:
      The phrase an error message uses.
    """
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
                    what = " (an empty cell)" if not s.strip() else ""
                    raise ValueError(f"{self.path}: column {col!r}, {where(int(self.rows[i]))}: "
                                     f"{shown(s)} is not a number{what}") from None
        bad = ~np.isfinite(v)
        if allow_empty:
            bad &= np.array([bool(s.strip()) for s in raw]) if bad.any() else bad
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "NaN" if np.isnan(v[i]) else "infinite"
            raise ValueError(f"{self.path}: column {col!r}, {where(int(self.rows[i]))}: value {shown(raw[i].strip())} "
                             f"is {what}; only finite numbers are allowed")
        return v


def resolve_path(path, key: str = "env.path") -> str:
    """Check that a data file exists (a relative path was anchored at the spec's folder by the loader).

    Args:
      path: the data file's path.
      key: the spec key that names it (for the error message).

    Returns:
      The path as a string.

    Raises:
      ValueError: ``path`` is not a string or path, is a folder or another non-regular file, or does not
        exist.
    """
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ValueError(f"{key} = {path!r} must be the path of a CSV file")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{key}: {path!r} is a folder; give the path of a CSV file")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{key}: {path!r} is not a regular file (a device or a pipe?); give the path of a CSV file")
    if not os.path.isfile(path):
        link = f" is a symbolic link to {os.readlink(path)!r}, which" if os.path.islink(path) else ""
        raise ValueError(f"{key}: data file {path!r}{link} does not exist (a relative path is relative to the "
                         "spec file)")
    return path


def _zip_member(data: bytes) -> bytes:
    """The one file of a zip archive."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        files = [m for m in z.infolist() if not m.is_dir()]
        if len(files) != 1:
            raise ValueError(f"a zip archive must hold exactly one file (the CSV); this one holds {len(files)} (an "
                             ".xlsx or .ods workbook is a zip archive of many: save the sheet as CSV)")
        return z.read(files[0])


# (name ending, what, first bytes, decompress): compression is recognised by the first bytes
COMPRESSIONS = ((".gz", "gzip", (b"\x1f\x8b",), gzip.decompress),
                (".bz2", "bzip2", tuple(b"BZh%d1AY&SY" % n for n in range(1, 10)), bz2.decompress),
                (".xz", "xz", (b"\xfd7zXZ\x00",), lzma.decompress),
                (".zip", "zip", (b"PK\x03\x04", b"PK\x05\x06"), _zip_member))
_DECOMPRESS_ERRORS = (OSError, EOFError, ValueError, RuntimeError, NotImplementedError, zlib.error, lzma.LZMAError,
                      zipfile.BadZipFile)


def _contents(path: str) -> tuple:
    """``(bytes, compression name or None)`` of a data file, decompressed; its name's ending must match."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as err:
        raise ValueError(f"{path}: cannot be read: {err.strerror or err}") from None
    by_content = next((c for c in COMPRESSIONS if data.startswith(c[2])), None)
    by_name = next((c for c in COMPRESSIONS if path.lower().endswith(c[0])), None)
    if by_name is not None and by_name is not by_content:
        found = f"{by_content[1]}-compressed" if by_content else "not compressed"
        raise ValueError(f"{path}: the name ends in {by_name[0]} but the file is {found}; "
                         f"a {by_name[0]} file must be {by_name[1]}-compressed")
    if by_content is None:
        return data, None
    try:
        return by_content[3](data), by_content[1]
    except _DECOMPRESS_ERRORS as err:
        raise ValueError(f"{path}: cannot be decompressed as {by_content[1]}: {err}") from None


# byte-order marks: UTF-32 before UTF-16 (FF FE 00 00 starts with FF FE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"), (b"", "utf-8"))


def _line_of(text, i: int) -> int:
    """The line (from 1) of character (or byte) ``i``."""
    return text.count("\n" if isinstance(text, str) else b"\n", 0, i) + 1


def _decoded(path: str, data: bytes, compression=None) -> str:
    """The text of a file's bytes: UTF-8, or UTF-8/16/32 after a byte-order mark; no NUL characters."""
    bom, encoding = next(b for b in _BOMS if data.startswith(b[0]))
    try:
        text = data[len(bom):].decode(encoding)
    except UnicodeDecodeError as err:
        at = len(bom) + err.start
        where = f"byte {at}" + (f" of the {compression}-decompressed text" if compression else "")
        raise ValueError(f"{path}: {where} (line {_line_of(data, at)}, 0x{data[at:at + 1].hex()}) is not "
                         f"{encoding.upper()}: {err.reason}; save the file as UTF-8 (a byte-order mark is "
                         "allowed)") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ValueError(f"{path}: line {_line_of(text, nul)} holds a NUL character; a CSV is text (is it UTF-16 "
                         "without a byte-order mark, or a binary file?)")
    return text


def _plain_fields(text: str):
    """``(header, columns, data-row numbers)`` of a CSV without quotes, blank or ragged lines; else None.

    One split in C: the fast path of large files."""
    text = text.replace("\r\n", "\n")
    if '"' in text or "\r" in text:
        return None
    head, _, body = text.partition("\n")
    header = head.split(",")
    width = len(header)
    body = body[:-1] if body.endswith("\n") else body
    if not body:
        return header, [[] for _ in header], np.zeros(0, np.int64)
    lines = body.split("\n")
    if set(map(str.count, lines, itertools.repeat(","))) != {width - 1}:
        return None  # blank or ragged lines: the csv module reads them and names the row
    fields = body.replace("\n", ",").split(",")
    return header, [fields[j::width] for j in range(width)], np.arange(1, len(lines) + 1)


_QUOTING = {"unexpected end of data": "a quoted field is never closed (a '\"' without its closing '\"')",
            "',' expected after '\"'": "a closing '\"' is followed by more text; inside a quoted field write '\"' "
                                       "as '\"\"'"}


def _csv_records(path: str, text: str):
    """``(header, records, data-row numbers)`` by the csv module: quotes, blank lines skipped.

    A row's number is its first line's number minus 1 (a quoted field may hold line breaks).
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    lines, starts, done = [], [], 0
    try:
        header = next(reader, [])
        done = reader.line_num
        for row in reader:
            if row:  # blank lines are skipped, row numbers kept
                lines.append(row)
                starts.append(done + 1)
            done = reader.line_num
    except csv.Error as err:
        raise ValueError(f"{path}: line {done + 1}: {_QUOTING.get(str(err), err)}") from None
    return header, lines, np.asarray(starts, np.int64) - 1


def _columns(path: str, width: int, records: list, rows) -> list:
    """The fields of ``records`` by column; a record of another width than the header's is an error."""
    short = next((i for i, row in enumerate(records) if len(row) != width), None)
    if short is not None:
        raise ValueError(f"{path}: {where(int(rows[short]))} has {len(records[short])} fields, the header has {width}")
    return [[row[j] for row in records] for j in range(width)]


_DELIMITERS = {";": "semicolon", "\t": "tab", "|": "'|'", " ": "space"}


def _checked_header(path: str, header, text: str, needed: dict) -> tuple:
    """The stripped header, which names every column of ``needed`` once (``needed``: column -> spec key)."""
    header = tuple(h.strip() for h in header)
    if not any(header):
        if not text.strip():
            raise ValueError(f"{path}: the file is {'empty' if not text else 'blank'}; its first line must be the "
                             "header naming the columns, separated by commas")
        raise ValueError(f"{path}: the header (line 1) is blank; the first line must name the columns, separated "
                         "by commas")
    missing = [col for col in needed if col not in header]
    if missing and len(header) == 1:
        first = text.partition("\n")[0]
        sep = max(_DELIMITERS, key=first.count)
        if first.count(sep):
            raise ValueError(f"{path}: the header (line 1) has no comma but {first.count(sep)} "
                             f"{_DELIMITERS[sep]}(s): the file seems {_DELIMITERS[sep]}-separated; columns must be "
                             "separated by commas")
    if missing:
        keys = ", ".join(dict.fromkeys(needed[col] for col in missing))
        listed = ", ".join(map(shown, header[:20])) + (f", ... ({len(header)} columns)" if len(header) > 20 else "")
        raise ValueError(f"{path}: missing column(s) {missing} (named by {keys}){did_you_mean(missing[0], header)}; "
                         f"the header (line 1) has [{listed}]")
    twice = next((col for col in needed if header.count(col) > 1), None)
    if twice is not None:
        at = [n + 1 for n, h in enumerate(header) if h == twice]
        raise ValueError(f"{path}: column {twice!r} appears {len(at)} times in the header (line 1, columns {at}); "
                         "the columns a spec names must be distinct")
    return header


def read(path, needed: dict, key: str = "env.path") -> Columns:
    """Read ``path`` (named by spec key ``key``); ``needed`` maps each column it must have to the spec key naming it.

    Args:
      path: the data file's path.
      needed: ``{column: spec key}`` of the columns the spec uses.
      key: the spec key that names the file.

    Returns:
      The :class:`Columns` of the needed columns.

    Raises:
      ValueError: one line naming the file and what is wrong (the rules of the module docstring).
    """
    path = resolve_path(path, key)
    text = _decoded(path, *_contents(path))
    plain = _plain_fields(text)  # the fast split when the text has no quotes
    header, body, rows = plain if plain is not None else _csv_records(path, text)
    header = _checked_header(path, header, text, needed)
    cols = body if plain is not None else _columns(path, len(header), body, rows)
    if not len(rows):
        raise ValueError(f"{path}: no data rows after the header (line 1)")
    index = {h: n for n, h in enumerate(header)}
    return Columns(path, header, {col: cols[index[col]] for col in needed}, rows)


def first_repeat(values):
    """``(i, j)``: the first entry ``i`` of ``values`` equal to an earlier one, first seen at ``j``; None if none.

    Args:
      values: a sequence of comparable values.

    Returns:
      ``(i, j)`` with ``j < i``, or ``None``.
    """
    keys = np.asarray(values)
    if len(keys) < 2:
        return None
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    seen_at = first[np.ravel(inverse)]
    later = np.flatnonzero(seen_at != np.arange(len(keys)))
    return (int(later[0]), int(seen_at[later[0]])) if later.size else None


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


def objective_matrix(cols: Columns, objectives, normalize=False, minimize=(), allow_empty: bool = False,
                     bounded: bool = True):
    """``(n, d)`` objective values in [0, 1] after the ``normalize`` / ``minimize`` options.

    Without normalization a value outside [0, 1] is an error naming its column and row. With
    ``allow_empty`` empty cells stay NaN (ignored by the min-max range). ``bounded = False`` (unclipped
    Gaussian feedback) takes any real value, and ``minimize`` negates a column that is not normalised.

    Args:
      cols: the :class:`Columns` read.
      objectives: the objective column names, ``d`` of them.
      normalize: ``True``, ``False`` or a list of objectives to min-max scale.
      minimize: ``True``, ``False`` or a list of lower-is-better objectives.
      allow_empty: keep empty cells as NaN.
      bounded: require values in ``[0, 1]``.

    Returns:
      ``(n, d)`` float64 numpy values, one row per data row.

    Raises:
      ValueError: a bad option, cell or range, naming its column and row.
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
            with np.errstate(over="ignore"):
                span = hi - lo
            if not np.isfinite(span):
                raise ValueError(f"{cols.path}: column {col!r} spans {lo} .. {hi}, whose width overflows; min-max "
                                 f"normalisation (env.normalize) needs max - min below {np.finfo(float).max:.4g}")
            v = (hi - v) / (hi - lo) if col in low else (v - lo) / (hi - lo)
        elif not bounded:
            v = -v if col in low else v
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
    zero or below is an error naming its row.

    Args:
      cols: the :class:`Columns` read.
      col: the cost column.
      keep: optional ``(n,)`` bool, the rows kept.

    Returns:
      ``(n_kept,)`` float64 numpy costs in ``(0, 1]``.

    Raises:
      ValueError: an empty or non-positive cost, or costs spanning more than float32 can hold.
    """
    keep = np.arange(len(cols)) if keep is None else np.flatnonzero(keep)
    c = cols.numbers(col, allow_empty=True)[keep]
    bad = np.flatnonzero(~(c > 0))
    if bad.size:
        i = int(bad[0])
        what = "is empty" if np.isnan(c[i]) else f"{c[i]} must be > 0"
        raise ValueError(f"{cols.path}: column {col!r}, {where(int(cols.rows[keep[i]]))}: cost {what}")
    return _cost_ratios(cols, col, c, keep)


def cost_scale(cols: Columns, col: str, keep=None) -> float:
    """The largest cost of column ``col`` (rows ``keep``, default all), in the column's own units: the unit
    :func:`normalized_costs` divides by, so that a budget ``B`` in normalized units is ``B * cost_scale`` there."""
    keep = np.arange(len(cols)) if keep is None else np.flatnonzero(keep)
    return float(np.nanmax(cols.numbers(col, allow_empty=True)[keep]))


def _cost_ratios(cols: Columns, col: str, c, keep) -> np.ndarray:
    """Positive costs ``c`` (rows ``keep`` of column ``col``) divided by the largest; a ratio that float32
    rounds to zero is an error naming its row."""
    tiny = float(np.finfo(np.float32).tiny)
    ratio = c / c.max()
    small = np.flatnonzero(ratio < tiny)
    if small.size:
        i = int(small[0])
        raise ValueError(f"{cols.path}: column {col!r}, {where(int(cols.rows[keep[i]]))}: cost {c[i]} divided by "
                         f"the largest ({c.max()}) is {ratio[i]:.3g}, which float32 rounds to zero; costs must "
                         f"span less than a factor {1 / tiny:.3g}")
    return ratio


def objective_names(section: dict) -> list:
    """``env.objectives``: a non-empty list of distinct column names.

    Args:
      section: the spec's ``[env]`` table.

    Returns:
      The list of objective column names.

    Raises:
      ValueError: ``env.objectives`` is missing, empty, not strings or repeats a name.
    """
    obj = section.get("objectives")
    if not isinstance(obj, list) or not obj or not all(isinstance(c, str) and c for c in obj):
        raise ValueError(f"env.objectives = {obj!r} must be a non-empty list of column names")
    if len(set(obj)) != len(obj):
        raise ValueError(f"env.objectives = {obj!r} lists a column twice")
    return obj


def column_name(section: dict, key: str, required: bool = True):
    """A string-valued key naming a column (``env.arm``, ``env.cost``, ...).

    Args:
      section: the spec's ``[env]`` table.
      key: the key, e.g. ``"arm"`` or ``"cost"``.
      required: whether the key must be given.

    Returns:
      The column name, or ``None`` where the key is absent and not required.

    Raises:
      ValueError: the value is not a non-empty string.
    """
    value = section.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"env.{key} = {value!r} must be the name of a CSV column")
    return value
