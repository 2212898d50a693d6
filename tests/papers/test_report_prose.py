"""Every number in a paper report's prose is one of its tables' numbers (issue 13: numbers typed by hand go
stale when a run changes). Reads the committed ``experiments/<paper>/report.md``; no engine run.

A prose number is a decimal (``0.5305``, ``-2.3%``, ``1,234.5``) in a line that is not a table row, heading,
image or code; it passes if a number of one of the report's tables rounds to it at its printed precision, or
if it is one of the builder's ``PROSE_CONSTANTS`` (settings of the readings, not results). Integers are not
checked (counts, d, n, k, T, years).
"""
import re
from pathlib import Path

import pytest

from mobandit_jax.runner.reproduce import load_report, report_builders

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"
DECIMAL = re.compile(r"(?<![\w.^/])[-+−]?\d{1,3}(?:,\d{3})*\.\d+%?|(?<![\w.^/])[-+−]?\d+\.\d+%?")
ANY_NUMBER = re.compile(r"[-+−]?\d+(?:,\d{3})*(?:\.\d+)?%?")


def _value(token: str) -> tuple:
    """``(value, decimals, is_percent)`` of a printed number."""
    text = token.replace("−", "-").replace(",", "").rstrip("%")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text), decimals, token.endswith("%")


def split(markdown: str) -> tuple:
    """``(prose lines, table lines)`` of a markdown document (code blocks, headings and images are neither)."""
    prose, tables, code = [], [], False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            code = not code
            continue
        if code or not stripped or stripped.startswith(("#", "![")):
            continue
        (tables if stripped.startswith("|") else prose).append(re.sub(r"`[^`]*`", "", stripped))
    return prose, tables


def unmatched(markdown: str, constants=()) -> list:
    """The prose numbers that neither round from a table number nor are ``constants``."""
    prose, tables = split(markdown)
    pool = [_value(t) for line in tables for t in ANY_NUMBER.findall(line)]
    missing = []
    for line in prose:
        for token in DECIMAL.findall(line):
            value, decimals, percent = _value(token)
            tol = 0.5 * 10.0 ** -decimals + 1e-12
            if any(abs(abs(value) - c) < 1e-12 for c in constants):
                continue
            if not any(p == percent and abs(abs(v) - abs(value)) <= tol for v, _, p in pool):
                missing.append(f"{token!r} in: {line[:120]}")
    return missing


def test_unmatched_finds_a_typed_number_and_accepts_table_values():
    report = "\n".join(["| a | b |", "|---|---|", "| x | 0.5305 ± 0.0012 / −2.31% |", "",
                        "Ours is 0.531 (−2.3%), the setting 0.45 d; the paper typed 0.6556.", "```", "9.99", "```"])
    assert unmatched(report, constants=(0.45,)) == ["'0.6556' in: Ours is 0.531 (−2.3%), the setting 0.45 d; the "
                                                    "paper typed 0.6556."]
    assert unmatched(report.replace("0.6556", "0.5305")) == ["'0.45' in: Ours is 0.531 (−2.3%), the setting 0.45 d; "
                                                            "the paper typed 0.5305."]


@pytest.mark.parametrize("paper", sorted(report_builders(EXPERIMENTS)))
def test_prose_numbers_are_table_numbers(paper):
    report = EXPERIMENTS / paper / "report.md"
    if not report.is_file():
        pytest.skip(f"{report} not built")
    builder = load_report(paper, EXPERIMENTS)
    missing = unmatched(report.read_text(encoding="utf-8"), getattr(builder, "PROSE_CONSTANTS", ()))
    assert not missing, f"{report}: numbers in the prose that no table holds:\n" + "\n".join(missing)
