"""Bad table and replay CSVs: one error line naming the file and the place, exit 2, no traceback (columns.py).

Each bad input runs through the CLI in this process (``cli_error``: exit 2, one ``error:`` line, no run
folder); each accepted variant (byte-order marks, line endings, quoting, compression, links) reads the
same numbers as the plain file. A property test mutates the bundled example table and a small replay
log: the plan builds, or building stops with one error line naming the file; never anything else.
"""
from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import io
import json
import lzma
import os
import zipfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from _user_data import cli_error
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mobandit_jax import cli
from mobandit_jax.errors import ConfigError
from mobandit_jax.problems import llm_configs, replay, table
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm_models.csv"
LOGS = Path(__file__).parents[1] / "data" / "llm_configs_small.csv"

G = "model,acc,speed,price\na,0.8,0.3,1\nb,0.6,0.5,2\nc,0.4,0.7,3\n"
R = "config,question,correct,lat,tokens\nx,q1,1,0.5,10\ny,q1,0,0.4,12\nx,q2,0,0.2,9\ny,q2,1,0.3,11\n"

SPEC = """\
[experiment]
horizon = 20
seeds = 2

[env]
{env}
[[policies]]
name = "uniform"
family = "budgeted"
"""
TABLE_ENV = """\
kind = "table"
path = "{name}"
arm = "model"
objectives = ["acc", "speed"]
cost = "price"
"""
REPLAY_ENV = """\
kind = "replay"
path = "{name}"
arm = "config"
instance = "question"
objectives = ["correct", "lat"]
cost = "tokens"
"""


def _spec(tmp_path, env, name, data=None) -> Path:
    """Write ``data`` (str: UTF-8) to ``name`` and a spec whose env reads it; return the spec's path."""
    if data is not None:
        (tmp_path / name).write_bytes(data.encode() if isinstance(data, str) else data)
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(env=env.format(name=name)))
    return path


def _error(tmp_path, capsys, data, name="data.csv", env=TABLE_ENV) -> str:
    """The one error line of a run on ``data``, after checking exit 2, no traceback and no run folder."""
    line = cli_error(_spec(tmp_path, env, name, data), tmp_path, capsys)
    assert "Traceback" not in line
    return line


def _zip(*members) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for i, text in enumerate(members):
            z.writestr(f"m{i}.csv", text)
    return buf.getvalue()


LATIN1 = G.replace("b,", "caf\xe9,").encode("latin-1")  # the 0xe9 is byte 37, on line 3

# id: (file name, bytes or text, what the error line says after "error: ...")
BAD_TABLES = {
    "latin1": ("data.csv", LATIN1, "data.csv: byte 37 (line 3, 0xe9) is not UTF-8"),
    "nul": ("data.csv", G.replace("0.6", "0\x006"), "data.csv: line 3 holds a NUL character"),
    "utf16_without_bom": ("data.csv", G.encode("utf-16-le"), "data.csv: line 1 holds a NUL character; a CSV is text "
                          "(is it UTF-16 without a byte-order mark"),
    "utf16_odd_bytes": ("data.csv", codecs.BOM_UTF16_LE + G.encode("utf-16-le")[:-1], "is not UTF-16-LE"),
    "semicolons": ("data.csv", G.replace(",", ";"), "data.csv: the header (line 1) has no comma but 3 semicolon(s): "
                   "the file seems semicolon-separated; columns must be separated by commas"),
    "tabs": ("data.csv", G.replace(",", "\t"), "data.csv: the header (line 1) has no comma but 3 tab(s)"),
    "longer_row": ("data.csv", G.replace("b,0.6,0.5,2", "b,0.6,0.5,2,9"),
                   "data.csv: row 2 (line 3) has 5 fields, the header has 4"),
    "shorter_row": ("data.csv", G.replace("b,0.6,0.5,2", "b,0.6,0.5"),
                    "data.csv: row 2 (line 3) has 3 fields, the header has 4"),
    "unterminated_quote": ("data.csv", G.replace("b,0.6", '"b,0.6'),
                           "data.csv: line 3: a quoted field is never closed"),
    "text_after_quote": ("data.csv", G.replace("b,0.6", '"b"x,0.6'),
                         "data.csv: line 3: a closing '\"' is followed by more text"),
    "empty": ("data.csv", "", "data.csv: the file is empty; its first line must be the header"),
    "header_only": ("data.csv", G.splitlines()[0] + "\n", "data.csv: no data rows after the header (line 1)"),
    "blank_lines": ("data.csv", "\n\r\n\n", "data.csv: the file is blank"),
    "blank_header": ("data.csv", "\n" + G, "data.csv: the header (line 1) is blank"),
    "duplicate_column": ("data.csv", G.replace("speed,", "speed,acc,").replace(",1\n", ",0,1\n").replace(
        ",2\n", ",0,2\n").replace(",3\n", ",0,3\n"), "data.csv: column 'acc' appears 2 times in the header (line 1, "
        "columns [2, 4])"),
    "blank_header_cell": ("data.csv", G.replace("speed", ""), "data.csv: missing column(s) ['speed'] (named by "
                          "env.objectives); the header (line 1) has ['model', 'acc', '', 'price']"),
    "blank_cell": ("data.csv", G.replace("0.6", ""), "data.csv: column 'acc', row 2 (line 3): '' is not a number "
                   "(an empty cell)"),
    "blank_arm": ("data.csv", G.replace("b,", ","), "data.csv: column 'model', row 2 (line 3): empty arm name"),
    "duplicate_arm": ("data.csv", G.replace("\nc,", "\na,"), "data.csv: column 'model', row 3 (line 4): duplicate arm "
                      "'a' (first at row 1 (line 2))"),
    "text": ("data.csv", G.replace("0.5", "fast"), "data.csv: column 'speed', row 2 (line 3): 'fast' is not a number"),
    "nan": ("data.csv", G.replace("0.5", "NaN"), "data.csv: column 'speed', row 2 (line 3): value 'NaN' is NaN"),
    "inf": ("data.csv", G.replace("0.5", "-inf"), "data.csv: column 'speed', row 2 (line 3): value '-inf' is "
            "infinite; only finite numbers are allowed"),
    "overflow": ("data.csv", G.replace("0.5", "1e309"), "data.csv: column 'speed', row 2 (line 3): value '1e309' is "
                 "infinite"),
    "huge": ("data.csv", G.replace("0.5", "1e308"), "data.csv: column 'speed', row 2 (line 3): value 1e+308 is "
             "outside [0, 1]"),
    "beyond_float32": ("data.csv", G.replace("0.5", "1e39"), "data.csv: column 'speed', row 2 (line 3): value 1e+39 "
                       "is outside [0, 1]"),
    "negative": ("data.csv", G.replace("0.5", "-0.1"), "data.csv: column 'speed', row 2 (line 3): value -0.1 is "
                 "outside [0, 1]; scale it or set env.normalize"),
    "cost_zero": ("data.csv", G.replace(",2\n", ",0\n"), "data.csv: column 'price', row 2 (line 3): cost 0.0 must "
                  "be > 0"),
    "cost_negative": ("data.csv", G.replace(",2\n", ",-2\n"), "column 'price', row 2 (line 3): cost -2.0 must be > 0"),
    "cost_empty": ("data.csv", G.replace(",2\n", ",\n"), "data.csv: column 'price', row 2 (line 3): cost is empty"),
    "cost_range": ("data.csv", G.replace(",2\n", ",1e-300\n"), "data.csv: column 'price', row 2 (line 3): cost "
                   "1e-300 divided by the largest (3.0) is 3.33e-301, which float32 rounds to zero"),
    "truncated_gz": ("data.csv.gz", gzip.compress(G.encode())[:-10], "data.csv.gz: cannot be decompressed as gzip: "
                     "Compressed file ended before the end-of-stream marker was reached"),
    "damaged_gz": ("data.csv.gz", gzip.compress(G.encode())[:12] + b"\xff" * 8 + gzip.compress(G.encode())[20:],
                   "data.csv.gz: cannot be decompressed as gzip: "),
    "truncated_bz2": ("data.csv.bz2", bz2.compress(G.encode())[:-8], "data.csv.bz2: cannot be decompressed as "
                      "bzip2: "),
    "truncated_xz": ("data.csv.xz", lzma.compress(G.encode())[:-8], "data.csv.xz: cannot be decompressed as xz: "),
    "zip_of_two": ("data.zip", _zip(G, G), "data.zip: cannot be decompressed as zip: a zip archive must hold exactly "
                   "one file (the CSV); this one holds 2"),
    "plain_named_gz": ("data.csv.gz", G, "data.csv.gz: the name ends in .gz but the file is not compressed"),
    "bz2_named_gz": ("data.csv.gz", bz2.compress(G.encode()), "the name ends in .gz but the file is "
                     "bzip2-compressed"),
    "latin1_in_gz": ("data.csv.gz", gzip.compress(LATIN1), "data.csv.gz: byte 37 of the gzip-decompressed text "
                     "(line 3, 0xe9) is not UTF-8"),
}


@pytest.mark.parametrize("case", list(BAD_TABLES))
def test_a_bad_table_file_is_one_line_naming_the_file_and_place(tmp_path, capsys, case):
    name, data, said = BAD_TABLES[case]
    assert said in _error(tmp_path, capsys, data, name)


def test_row_numbers_count_the_lines_a_quoted_field_spans(tmp_path, capsys):
    text = 'model,acc,speed,price\n"a\nsecond line",0.8,0.3,1\nb,0.6,zz,2\n'
    assert "data.csv: column 'speed', row 3 (line 4): 'zz' is not a number" in _error(tmp_path, capsys, text)


BAD_OPTIONS = {
    "minimize_unknown": ('minimize = ["latency"]', "env.minimize names ['latency'], which are not objectives; "
                         "objectives: ['acc', 'speed']"),
    "normalize_unknown": ('normalize = ["price"]', "env.normalize names ['price'], which are not objectives"),
    "normalize_constant": ("normalize = true", "data.csv: column 'acc' is constant (0.5); min-max normalisation"),
    "objective_unknown": ('objectives = ["acc", "latency"]', "data.csv: missing column(s) ['latency'] (named by "
                          "env.objectives)"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_an_option_naming_a_missing_column_or_a_constant_one(tmp_path, capsys, case):
    option, said = BAD_OPTIONS[case]
    env = TABLE_ENV.replace('objectives = ["acc", "speed"]', option) if "objectives" in option else \
        TABLE_ENV + option + "\n"
    assert said in _error(tmp_path, capsys, G.replace("0.8", "0.5").replace("0.6", "0.5").replace("0.4", "0.5"),
                          env=env)


def test_normalizing_a_range_wider_than_float64(tmp_path, capsys):
    text = G.replace("0.8", "-1e308").replace("0.6", "1e308")
    err = _error(tmp_path, capsys, text, env=TABLE_ENV + "normalize = true\n")
    assert "data.csv: column 'acc' spans -1e+308 .. 1e+308, whose width overflows" in err


# ------------------------------------------------------------------------------------------------ paths

def test_a_folder_a_missing_file_a_broken_link_and_a_device(tmp_path, capsys):
    (tmp_path / "folder.csv").mkdir()
    assert f"env.path: '{tmp_path / 'folder.csv'}' is a folder" in _error(tmp_path, capsys, None, "folder.csv")
    err = _error(tmp_path, capsys, None, "missing.csv")
    assert f"env.path: data file '{tmp_path / 'missing.csv'}' does not exist" in err
    os.symlink(tmp_path / "gone.csv", tmp_path / "link.csv")
    err = _error(tmp_path, capsys, None, "link.csv")
    assert f"'{tmp_path / 'link.csv'}' is a symbolic link to '{tmp_path / 'gone.csv'}', which does not exist" in err
    if os.path.exists("/dev/null"):
        assert "env.path: '/dev/null' is not a regular file" in _error(tmp_path, capsys, None, "/dev/null")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_file(tmp_path, capsys):
    (tmp_path / "data.csv").write_text(G)
    (tmp_path / "data.csv").chmod(0)
    try:
        assert "data.csv: cannot be read: Permission denied" in _error(tmp_path, capsys, None)
    finally:
        (tmp_path / "data.csv").chmod(0o644)


# ------------------------------------------------------------------------------------- accepted variants

def _quoted(text: str) -> str:
    return "\n".join(",".join(f'"{c}"' for c in line.split(",")) for line in text.splitlines()) + "\n"


ACCEPTED = {
    "utf8_bom": ("data.csv", codecs.BOM_UTF8 + G.encode()),
    "utf16_le_bom": ("data.csv", G.encode("utf-16")),
    "utf16_be_bom": ("data.csv", codecs.BOM_UTF16_BE + G.encode("utf-16-be")),
    "utf32_bom": ("data.csv", G.encode("utf-32")),
    "crlf": ("data.csv", G.replace("\n", "\r\n")),
    "cr": ("data.csv", G.replace("\n", "\r")),
    "bom_crlf_no_final_newline": ("data.csv", codecs.BOM_UTF8 + G.replace("\n", "\r\n").rstrip().encode()),
    "quoted": ("data.csv", _quoted(G)),
    "blank_lines_inside": ("data.csv", G.replace("\nb,", "\n\n\nb,") + "\n\n"),
    "unused_blank_and_repeated_columns": ("data.csv", "\n".join(line + ",,x,x" for line in G.splitlines()) + "\n"),
    "gzip": ("data.csv.gz", gzip.compress(G.encode(), mtime=0)),
    "gzip_of_utf16": ("data.csv.gz", gzip.compress(G.encode("utf-16"), mtime=0)),
    "gzip_named_csv": ("data.csv", gzip.compress(G.encode(), mtime=0)),
    "bzip2": ("data.csv.bz2", bz2.compress(G.encode())),
    "xz": ("data.csv.xz", lzma.compress(G.encode())),
    "zip": ("data.zip", _zip(G)),
}


def _read(path):
    return table.read_table(path, "model", ["acc", "speed"], "price")


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_accepted_variants_read_the_numbers_of_the_plain_file(tmp_path, case):
    (tmp_path / "plain.csv").write_text(G)
    name, data = ACCEPTED[case]
    (tmp_path / name).write_bytes(data.encode() if isinstance(data, str) else data)
    want, got = _read(tmp_path / "plain.csv"), _read(tmp_path / name)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])


def test_quoted_commas_quotes_and_line_breaks_stay_in_the_arm_name(tmp_path):
    (tmp_path / "data.csv").write_text(G.replace("a,", '"a, the ""first"",\nsmall",'))
    assert _read(tmp_path / "data.csv")[0] == ('a, the "first",\nsmall', "b", "c")


def test_a_symbolic_link_to_a_csv(tmp_path):
    (tmp_path / "plain.csv").write_text(G)
    os.symlink(tmp_path / "plain.csv", tmp_path / "link.csv")
    np.testing.assert_array_equal(_read(tmp_path / "link.csv")[1], _read(tmp_path / "plain.csv")[1])


E2E_ENV = """\
kind = "table"
path = "{name}"
arm = "model"
objectives = ["knowledge", "reasoning", "instructions"]
cost = "params_b"
"""


def _run(tmp_path, name, data, out="run", env=E2E_ENV):
    """``(exit code, stderr lines, run folder)`` of the CLI on a spec reading ``data`` (default: example table)."""
    spec = _spec(tmp_path, env, name, data)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = cli.main(["run", str(spec), "--out", str(tmp_path / out), "--quiet"])
    return rc, err.getvalue().strip().splitlines(), tmp_path / out


def _records(folder):
    return json.loads((folder / "summary.json").read_text())["records"]


def test_a_bom_crlf_gzip_copy_of_the_example_table_runs_like_the_plain_file(tmp_path):
    rc, _, plain = _run(tmp_path, "plain.csv", EXAMPLE.read_bytes(), "plain")
    assert rc == 0
    text = EXAMPLE.read_text().replace("\n", "\r\n")
    rc, err, variant = _run(tmp_path, "variant.csv.gz", gzip.compress(codecs.BOM_UTF8 + text.encode()), "variant")
    assert rc == 0 and not err
    assert _records(variant) == _records(plain)


# ------------------------------------------------------------------------------------------------ replay

BAD_REPLAYS = {
    "repeated_pair": (R + "x,q1,1,0.1,10\n", "data.csv: row 5 (line 6) repeats arm 'x', instance 'q1' of row 1 "
                      "(line 2); a replay has one row per (arm, instance) observation"),
    "blank_instance": (R.replace("y,q2", "y,"), "data.csv: column 'question', row 4 (line 5): empty name"),
    "blank_arm": (R.replace("y,q2", ",q2"), "data.csv: column 'config', row 4 (line 5): empty name"),
    "arm_without_instances": (R + "z,q1,,,\n", "data.csv: arm 'z' (column 'config') has no instances: its row 5 "
                              "(line 6)"),
    "partly_empty_row": (R.replace("0,0.4,12", ",0.4,12"), "data.csv: column 'correct', row 2 (line 3): empty value"),
    "one_arm": (R.replace("y,", "x,").replace("q1,0", "q3,0").replace("q2,1", "q4,1"),
                "data.csv: column 'config' names 1 arm(s); a bandit needs at least 2"),
    "outside_unit_interval": (R.replace("0.4", "4"), "data.csv: column 'lat', row 2 (line 3): value 4.0 is outside"),
    "ragged": (R.replace("x,q2,0,0.2,9", "x,q2,0,0.2"), "data.csv: row 3 (line 4) has 4 fields, the header has 5"),
    "tabs": (R.replace(",", "\t"), "data.csv: the header (line 1) has no comma but 4 tab(s)"),
    "cost_zero": (R.replace(",12", ",0"), "data.csv: column 'tokens', row 2 (line 3): cost 0.0 must be > 0"),
    "missing_instance_column": (R.replace("question", "item"), "data.csv: missing column(s) ['question'] (named by "
                                "env.instance)"),
}


@pytest.mark.parametrize("case", list(BAD_REPLAYS))
def test_a_bad_replay_file_is_one_line_naming_the_file_and_place(tmp_path, capsys, case):
    data, said = BAD_REPLAYS[case]
    assert said in _error(tmp_path, capsys, data, env=REPLAY_ENV)


def test_replay_accepts_bom_crlf_and_placeholders_with_a_blank_instance(tmp_path):
    def means(name, text):
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
        inst = replay.build_instance(tmp_path / name, "config", "question", ["correct", "lat"], "tokens")
        return inst.means, inst.mean_costs
    plain = means("plain.csv", R)
    for variant in (codecs.BOM_UTF8 + R.replace("\n", "\r\n").encode(), R + "x,,,,\n", bz2.compress(R.encode())):
        for a, b in zip(means("variant.csv", variant), plain, strict=False):
            np.testing.assert_array_equal(a, b)


def test_llm_config_logs_read_with_a_bom_and_name_their_spec_key(tmp_path, monkeypatch):
    (tmp_path / "logs.csv.gz").write_bytes(gzip.compress(codecs.BOM_UTF8 + LOGS.read_bytes()))
    monkeypatch.chdir(tmp_path)
    got, want = llm_configs._logs_for("logs.csv.gz", None, 0, 12), llm_configs.load_logs(LOGS)
    np.testing.assert_array_equal(got.tokens, want.tokens)
    assert got.configs == want.configs
    with pytest.raises(ValueError, match="env.dataset: data file 'nope.csv' does not exist"):
        llm_configs.load_logs("nope.csv")


# ------------------------------------------------------------------------------ property: random damage

def _offset(draw, data: bytes, end: int = 0) -> int:
    return draw(st.integers(0, max(len(data) - 1 + end, 0)))


def _delete(draw, data):
    i = _offset(draw, data)
    return data[:i] + data[i + draw(st.integers(1, 8)):]


def _insert(draw, data):
    i = _offset(draw, data, 1)
    return data[:i] + draw(st.binary(min_size=1, max_size=8)) + data[i:]


def _duplicate(draw, data):
    i, n = _offset(draw, data), draw(st.integers(1, 40))
    return data[:i + n] + data[i:i + n] + data[i + n:]


CELLS = st.one_of(st.text(max_size=12), st.floats().map(repr), st.integers(-10**40, 10**40).map(str),
                  st.sampled_from(["", " ", '"', "nan", "-0", "1e-300", "1e308", "0x1", "1,5"]))


def _lines_edit(edit):
    """An edit of the ``\\n``-separated lines of the data: ``edit(draw, lines, r)`` changes line ``r``."""
    def apply(draw, data):
        lines = data.split(b"\n")
        edit(draw, lines, _offset(draw, lines))
        return b"\n".join(lines)
    return apply


def _cell(draw, lines, r):
    cells = lines[r].split(b",")
    cells[_offset(draw, cells)] = draw(CELLS).encode()
    lines[r] = b",".join(cells)


def _drop(draw, lines, r):
    del lines[r]


def _truncate(draw, lines, r):
    lines[r] = lines[r][:_offset(draw, lines[r])]


def _header(draw, lines, r):
    cells = lines[0].split(b",")
    j = _offset(draw, cells)
    how = draw(st.sampled_from(["replace", "delete", "repeat"]))
    cells[j:j + 1] = {"replace": [draw(CELLS).encode()], "delete": [],
                      "repeat": [cells[j], cells[j]]}[how]
    lines[0] = b",".join(cells)


def _compress(draw, data):
    packed = draw(st.sampled_from([partial(gzip.compress, mtime=0), bz2.compress, lzma.compress]))(data)
    return packed[:draw(st.integers(len(packed) // 2, len(packed)))]


EDITS = [_delete, _insert, _duplicate, _lines_edit(_cell), _lines_edit(_drop), _lines_edit(_truncate),
         _lines_edit(_header), _compress]


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` after one to three random edits (the last one may compress and truncate it)."""
    for _ in range(draw(st.integers(1, 3))):
        data = draw(st.sampled_from(EDITS))(draw, data)
    return data


def _replay_log() -> str:
    rng = np.random.default_rng(1)
    rows = [f"cfg{a},q{q},{int(rng.random() < 0.5)},{rng.random():.3f},{rng.integers(5, 50)}"
            for a in range(3) for q in range(4)]
    return R.splitlines()[0] + "\n" + "\n".join(rows) + "\n"


FILES = {"table": (E2E_ENV, EXAMPLE.read_bytes()), "replay": (REPLAY_ENV, _replay_log().encode())}
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("damaged")


def _check_build(folder, kind, data):
    """Build the plan of the spec reading ``data``: it builds, or stops with one line naming the file."""
    env, _ = FILES[kind]
    try:
        plans.checked_build(config.load(_spec(folder, env + "[budget]\nrho = 2\n", "data.csv", data)))
    except ConfigError as err:
        assert str(err).strip() and "\n" not in str(err) and "\r" not in str(err)
        assert "data.csv" in str(err), str(err)


@pytest.mark.parametrize("kind", list(FILES))
def test_damaged_files_build_a_plan_or_give_one_error_line(folder, kind):
    @settings(max_examples=300, **SETTINGS)
    @given(damaged(FILES[kind][1]))
    def check(data):
        _check_build(folder, kind, data)
    check()


def _valid_edits(data: bytes) -> list:
    """Two edits that keep a file valid: its last row dropped, its second line's second cell quoted."""
    lines = data.split(b"\n")
    cells = lines[1].split(b",")
    quoted = b"\n".join(lines[:1] + [b",".join(cells[:1] + [b'"' + cells[1] + b'"'] + cells[2:])] + lines[2:])
    return [b"\n".join(lines[:-2] + [b""]), quoted]


@pytest.mark.parametrize("kind", list(FILES))
def test_damaged_files_run_or_exit_2_with_one_line(folder, kind):
    env, data = FILES[kind]
    runs = iter(range(10**6))
    outcomes = set()

    @settings(max_examples=5, **SETTINGS)
    @given(damaged(data))
    @example(_valid_edits(data)[0])
    @example(_valid_edits(data)[1])
    def check(damaged_data):
        out = folder / f"e2e_{kind}{next(runs)}"
        out.mkdir()
        rc, err, run = _run(out, "data.csv", damaged_data, env=env)
        if rc == 0:
            assert (run / "summary.json").exists()
            outcomes.add("ran")
        else:
            assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and "data.csv" in err[0], err
            assert not (run / "summary.json").exists()
            outcomes.add("refused")

    check()
    assert outcomes == {"ran", "refused"}
