"""The LLM selective-ensemble arm table of PDMOB (K = 42 models, d = 7 capabilities).

PDMOB (preference-directed MO bandits), Section 4.1 and Appendix B.2, Table 3. The paper builds
its action set from the Open LLM Leaderboard: ``K = 42`` models described by ``d = 7`` capabilities
(accuracy, advanced problem-solving, reasoning, domain knowledge, interaction consistency,
multitasking, processing speed), and draws stochastic feedback from a Beta distribution with
concentration ``c = 1``. Its exact table is not public; this module rebuilds one from real scores
(``mobandit_jax/data/open_llm_leaderboard/``, provenance in the README there).

Capability mapping (one Open LLM Leaderboard v2 benchmark per capability, in the paper's order):

====  ==========================  ===========================================================
 j    capability                  source column
====  ==========================  ===========================================================
 0    accuracy                    ``leaderboard_mmlu_pro`` (MMLU-PRO, 10-choice knowledge QA)
 1    advanced problem-solving    ``leaderboard_math_hard`` (MATH level 5)
 2    reasoning                   ``leaderboard_bbh`` (BIG-Bench Hard)
 3    domain knowledge            ``leaderboard_gpqa`` (graduate-level science QA)
 4    interaction consistency     ``leaderboard_ifeval`` (instruction following)
 5    multitasking                ``leaderboard_musr`` (multi-step soft reasoning)
 6    processing speed            ``-log(Model Size (B))`` from the v1 file (smaller is faster)
====  ==========================  ===========================================================

Selection rule: of the 72 base models with v2 scores (all have a size in the v1 file), keep the
42 with the highest mean raw score over the six v2 benchmarks (ties broken by model name). Each
column is then min-max normalised over the 42 kept models to ``[0, 1]`` (optionally squeezed
affinely into ``[margin, 1 - margin]``, default ``margin = 0``; the Beta sampler returns a mean of
exactly 0 or 1 as that value). A common positive affine map leaves C-dominance, the Pareto
C-optimal set and the ranking of preference gaps unchanged (gaps scale by ``1 - 2 margin``).

Feedback (Section 4.1): ``y ~ Beta(c mu, c (1 - mu))`` per coordinate, ``c = 1``, drawn by the
stochastic environment (``make_stochastic``, i.e. ``stochastic_sampler("beta")``), so the reward of arm ``i`` at
its ``j``-th pull is a pure function of ``(key, i, j)``.

The paper's Table 3 matrices and scenario roles are report data: ``experiments/pdmob/report.py``.

PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed Multi-Objective
Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
"""
from __future__ import annotations

import csv
import functools
import math
from pathlib import Path

import numpy as np

from ..registry import register_env
from ..types import EnvInstance
from .stochastic import make_stochastic
from .table import with_fixed_costs

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "open_llm_leaderboard"
V2_FILE = "base_llm_leaderboard_v2_eval.csv"
V1_FILE = "base_llm_benchmark_eval.csv"

CAPABILITIES = (
    "accuracy",
    "advanced problem-solving",
    "reasoning",
    "domain knowledge",
    "interaction consistency",
    "multitasking",
    "processing speed",
)
BENCHMARKS = (
    "leaderboard_mmlu_pro",
    "leaderboard_math_hard",
    "leaderboard_bbh",
    "leaderboard_gpqa",
    "leaderboard_ifeval",
    "leaderboard_musr",
)
NUM_MODELS = 42
COSTS = ("none", "model_size")  # env.costs: the paper's costless pulls, or a model's size over the largest


def _read_csv(path: Path) -> list:
    if not path.is_file():
        raise FileNotFoundError(f"LLM leaderboard data file {path} is missing")
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _number(text: str, path: Path, row: int, column: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"{path}: row {row} column {column!r} holds {text!r}, expected a finite number")
    return value


def load_scores(data_dir=DATA_DIR) -> tuple:
    """Raw ``(names, scores (n, 6), sizes (n,))`` of every model with v2 scores and a known size.

    Args:
      data_dir: the folder holding :data:`V2_FILE` and :data:`V1_FILE`.

    Returns:
      ``(names, scores, sizes)``: a list of ``n`` model names, ``(n, 6)`` raw scores on :data:`BENCHMARKS`
      and ``(n,)`` sizes in billions of parameters (float numpy).

    Raises:
      FileNotFoundError: a data file is missing.
      ValueError: a missing column, a non-finite score or a missing or non-positive size.
    """
    data_dir = Path(data_dir)
    v2_path, v1_path = data_dir / V2_FILE, data_dir / V1_FILE
    v2 = _read_csv(v2_path)
    v1 = _read_csv(v1_path)
    if v2 and any(b not in v2[0] for b in BENCHMARKS):
        missing = [b for b in BENCHMARKS if b not in v2[0]]
        raise ValueError(f"{v2_path}: missing column(s) {missing}; expected {list(BENCHMARKS)}")
    sizes = {r["Model"]: r.get("Model Size (B)", "") for r in v1}
    names, scores, size = [], [], []
    for i, r in enumerate(v2, start=2):  # row 1 is the header
        name = r["Model"]
        if name not in sizes:
            raise ValueError(f"{v2_path}: row {i} model {name!r} has no size in {v1_path}")
        names.append(name)
        scores.append([_number(r[b], v2_path, i, b) for b in BENCHMARKS])
        s = _number(sizes[name], v1_path, i, "Model Size (B)")
        if s <= 0:
            raise ValueError(f"{v1_path}: model {name!r} has size {s}, expected > 0")
        size.append(s)
    return names, np.array(scores, float), np.array(size, float)


def select_models(names, scores, k: int = NUM_MODELS) -> np.ndarray:
    """Indices of the ``k`` models with the highest mean v2 score (ties by name), best first.

    Args:
      names: the ``n`` model names.
      scores: ``(n, 6)`` raw scores.
      k: number of models kept, in ``[1, n]``.

    Returns:
      ``(k,)`` int numpy indices.

    Raises:
      ValueError: ``k`` out of range.
    """
    if not 1 <= k <= len(names):
        raise ValueError(f"num_models={k} is not in 1..{len(names)}")
    mean = np.asarray(scores).mean(axis=1)
    order = sorted(range(len(names)), key=lambda i: (-mean[i], names[i]))
    return np.array(order[:k], int)


def minmax(x, axis=0) -> np.ndarray:
    """Column-wise min-max normalisation to ``[0, 1]`` (a constant column maps to 0.5).

    Args:
      x: the values (array-like).
      axis: the axis normalised over.

    Returns:
      A float numpy array shaped like ``x``.
    """
    x = np.asarray(x, float)
    lo, hi = x.min(axis=axis, keepdims=True), x.max(axis=axis, keepdims=True)
    span = hi - lo
    return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1.0), 0.5)


@functools.lru_cache(maxsize=4)
def _table(num_models: int, margin: float, data_dir: str) -> tuple:
    names, scores, sizes = load_scores(data_dir)
    idx = select_models(names, scores, num_models)
    raw = np.column_stack([scores[idx], -np.log(sizes[idx])])
    table = margin + (1.0 - 2.0 * margin) * minmax(raw)
    return tuple(names[i] for i in idx), table, sizes[idx]


def arm_table(num_models: int = NUM_MODELS, margin: float = 0.0, data_dir=DATA_DIR) -> tuple:
    """``(model names, means (K, 7), sizes (K,))``: the normalised capability table of Section 4.1.

    Args:
      num_models: ``K``, the number of models kept.
      margin: affine squeeze into ``[margin, 1 - margin]``, in ``[0, 0.5)``.
      data_dir: the data folder.

    Returns:
      ``(names, means, sizes)``: ``K`` names, ``(K, 7)`` float numpy means and ``(K,)`` sizes.

    Raises:
      ValueError: ``margin`` out of range (or ``num_models``, by :func:`select_models`).
    """
    if not 0.0 <= margin < 0.5:
        raise ValueError(f"margin={margin} is not in [0, 0.5)")
    names, table, sizes = _table(int(num_models), float(margin), str(data_dir))
    return names, table.copy(), sizes.copy()


@register_env(
    "llm_leaderboard",
    doc="PDMOB LLM selective ensemble: 42 Open LLM Leaderboard models x 7 capabilities, Beta(c) feedback",
    keys=("num_models", "margin", "concentration", "noise", "sigma", "clip", "k", "costs"),
)
def build(section: dict, config: dict) -> EnvInstance:
    """Build the K x 7 LLM arm table environment (Section 4.1) with Beta feedback of concentration c.

    Beyond the paper: ``k`` (slate size, for the slate family) and ``costs = "model_size"`` (a pull of a
    model costs its size over the largest size, so budgets and cost-aware identification apply; the
    default ``"none"`` is the paper's costless setting), and ``noise = "gaussian"`` with ``sigma`` (and
    ``clip``) for methods whose guarantee is stated for Gaussian noise.

    Args:
      section: the spec's ``[env]`` table (``num_models``, ``margin``, ``concentration``, ``noise``,
        ``sigma``, ``clip``, ``k``, ``costs``).
      config: the whole spec (not read).

    Returns:
      The stochastic :class:`~mobandit_jax.types.EnvInstance` (reference point 0; ``info`` names the models,
      capabilities and sizes).

    Raises:
      ValueError: a key's value is not allowed, naming it and what is.
    """
    num_models = int(section.get("num_models", NUM_MODELS))
    margin = float(section.get("margin", 0.0))
    conc = float(section.get("concentration", 1.0))
    noise = section.get("noise", "beta")
    if noise not in ("beta", "bernoulli", "gaussian"):
        raise ValueError(f"env.noise={noise!r} is not allowed for llm_leaderboard; use 'beta', 'bernoulli' or "
                         "'gaussian' (+ sigma, clip)")
    k, costs = section.get("k", 0), section.get("costs", "none")
    if costs not in COSTS:
        raise ValueError(f"env.costs={costs!r} is not allowed for llm_leaderboard; use one of {list(COSTS)}")
    names, means, sizes = arm_table(num_models, margin)
    if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= len(names)):
        raise ValueError(f"env.k = {k!r} (slate size) must be an integer in [1, {len(names)}], or 0 for no slate")
    inst = make_stochastic(means, noise, conc, float(section.get("sigma", 0.1)), clip=section.get("clip", True))
    info = {"models": list(names), "capabilities": list(CAPABILITIES), "sizes_b": sizes.tolist()}
    inst = inst._replace(static_key=("llm_leaderboard",) + inst.static_key[1:], info=info, slate_size=k,
                         ref=np.zeros(means.shape[1]))
    if costs == "none":
        return inst
    return with_fixed_costs(inst._replace(static_key=inst.static_key + (costs,)), sizes / sizes.max())
