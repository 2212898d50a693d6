"""Rebuild ``examples/llm_models.csv`` from the bundled Open LLM Leaderboard scores.

The 12 base models with the highest mean Open LLM Leaderboard v2 score (the selection rule of
PDMOB, Section 4.1, ``mobandit_jax/problems/llm_leaderboard.py``), three of their v2 scores as
objectives in [0, 1] (MMLU-PRO, BIG-Bench Hard, IFEval; higher is better) and their size in
billions of parameters as the cost of a pull. Run from the repository root:
``python examples/make_llm_models.py``.
"""
import csv
from pathlib import Path

from mobandit_jax.problems.llm_leaderboard import BENCHMARKS, load_scores, select_models

NUM_MODELS = 12
COLUMNS = {"knowledge": "leaderboard_mmlu_pro", "reasoning": "leaderboard_bbh", "instructions": "leaderboard_ifeval"}


def main(path=None):
    path = path or Path(__file__).with_name("llm_models.csv")
    names, scores, sizes = load_scores()
    rows = [["model", *COLUMNS, "params_b"]]
    for i in select_models(names, scores, NUM_MODELS):
        values = [scores[i, BENCHMARKS.index(src)] for src in COLUMNS.values()]
        rows.append([names[i], *(f"{v:.4f}" for v in values), f"{sizes[i]:g}"])
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


if __name__ == "__main__":
    main()
