"""Budgeted LLM configuration evaluation: per-instance logs, preprocessing and bootstrap replays.

Implements the experimental environment of Xue et al. ("Cost-Aware Multi-Objective
Bandits: Theory and Application to Budgeted LLM Configuration Evaluation"): Section 5.1 (datasets,
Table 1, the 14-arm identification subset) and Appendix A "Experimental Details" (200/800
profiling/evaluation split, latency percentiles ``tau5``/``tau95``, the normalized inverse-latency
efficiency ``r_eff = clip((1/t - 1/tau95) / (1/tau5 - 1/tau95), 0, 1)``, deterministic arm cost
``c_i`` = profiling mean token count, costs divided by ``c_max``, budget ``B = rho * K * c_bar``,
arm-wise bootstrap replays shared by all methods of a repetition).

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).

Data sources
------------
* Real logs: a long CSV with one row per (configuration, instance) and the columns
  ``config_id, model, temperature, max_tokens, prompt, instance_id, correct, latency_s, tokens``
  (``correct`` in {0, 1}, ``latency_s`` > 0 seconds, ``tokens`` > 0). Every configuration must
  have every instance exactly once. See :func:`load_logs`.
* The per-instance logs of the paper are not public, so ``dataset = "gsm8k"`` / ``"piqa"`` read a
  **simulated** stand-in of the same shape bundled with the package
  (``mobandit_jax/data/llm_configs/<dataset>_simulated.csv.gz``, :func:`bundled_logs`): GSM8K-like
  K = 108, PIQA-like K = 132, 1,000 instances each, generator seeds 258 / 87. The generator and
  its seed search are ``experiments/cost_aware/simulated_logs.py``. Everything built from it is
  labelled "simulated" (``info["label"]``, ``info["simulated"]``).

Choices where Appendix A is silent (documented here and in the report)
--------------------------------------------------------------------------
* ``tau5``, ``tau95`` are percentiles of all profiling latencies pooled over configurations.
* ``c_max`` ("the maximum token cost" of the profiling split) is, with ``c_max = "instance"``
  (default), the largest per-instance token count in the profiling split; a realized evaluation
  cost ``tokens / c_max`` above 1 is clipped to 1 so that costs lie in ``[lambda, 1]``. With
  ``c_max = "arm_mean"`` it is the largest arm cost ``max_i c_i`` (profiling mean tokens), so the
  normalized ``c_i`` span ``[min_i c_i / max_i c_i, 1]``; realized per-instance costs would exceed 1,
  so this reading needs ``costs = "deterministic"``.
* The cost floor ``lambda`` is the smallest cost a pull can be charged: the minimum normalized
  evaluation cost (``costs = "random"``, realized token charges) or ``min_i c_i / c_max``
  (``costs = "deterministic"``, the theorem-aligned fixed charge ``c_i / c_max`` on every pull).
* The profiling/evaluation split is a permutation drawn once from ``split_seed``.
* The bootstrap stream is the replay environment's (:mod:`mobandit_jax.problems.replay`): pull
  ``j`` of arm ``i`` returns evaluation instance ``q = hash(key, i, j) mod 800``.
"""
from __future__ import annotations

import csv
import functools
import gzip
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..kernels.gaps import strict_pareto_mask_np
from ..registry import register_env
from ..types import EnvInstance
from . import columns
from .costs import validate_budget, validate_costs  # noqa: F401  (re-exported)
from .replay import ReplayParams, bulk_sum, instance_index, prefix_table, pull_values, replay_env, sample  # noqa: F401  (re-exported)

COLUMNS = ("config_id", "model", "temperature", "max_tokens", "prompt", "instance_id",
           "correct", "latency_s", "tokens")
NUMERIC = ("temperature", "max_tokens", "correct", "latency_s", "tokens")

# The seven models common to both datasets (Appendix A, identification subset), then extras.
COMMON_MODELS = ("gpt2", "codellama-7b", "tulu-7b", "tulu-2-7b", "gemma-7b", "llama-7b", "mistral-7b")
IDENT_TEMPERATURES = (0.5, 1.0)
IDENT_MAX_TOKENS = 128
IDENT_PROMPT = "direct"

DATASETS = ("gsm8k", "piqa")  # the bundled simulated stand-ins
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "llm_configs"
BUNDLED_SEEDS = {"gsm8k": 258, "piqa": 87}  # generator seeds of the bundled files


@dataclass(frozen=True)
class ConfigLogs:
    """Per-instance logs: ``correct``, ``latency`` (s), ``tokens`` of shape (K, N), plus metadata."""

    configs: tuple  # K dicts: config_id, model, temperature, max_tokens, prompt
    instance_ids: tuple
    correct: np.ndarray
    latency: np.ndarray
    tokens: np.ndarray
    source: str
    simulated: bool

    @property
    def num_configs(self) -> int:
        """Number of configurations K.

        Returns:
          ``K``, the rows of ``correct``.
        """
        return self.correct.shape[0]

    def select(self, idx) -> ConfigLogs:
        """The logs restricted to configurations ``idx`` (in that order).

        Args:
          idx: configuration indices, a sequence or an int array.

        Returns:
          A new :class:`ConfigLogs` with those configurations' rows; instances, source and label unchanged.
        """
        idx = np.asarray(idx, int)
        return ConfigLogs(tuple(self.configs[i] for i in idx), self.instance_ids, self.correct[idx],
                          self.latency[idx], self.tokens[idx], self.source, self.simulated)


# --------------------------------------------------------------------------------------------
# Loader for real logs
# --------------------------------------------------------------------------------------------

def load_logs(path) -> ConfigLogs:
    """Read a long CSV of per-instance logs (columns :data:`COLUMNS`, may be compressed) as :class:`ConfigLogs`.

    Args:
      path: the CSV's path.

    Returns:
      The :class:`ConfigLogs`, configurations in order of first appearance, instances sorted by id.

    Raises:
      ValueError: a bad file, cell, or a missing or repeated (configuration, instance) pair.
    """
    cols = columns.read(path, {c: "the llm_configs log format" for c in COLUMNS}, key="env.dataset")
    path = cols.path
    values = {c: cols.numbers(c) for c in NUMERIC}
    text = {c: cols.text(c) for c in ("config_id", "model", "prompt", "instance_id")}
    for c, cells in text.items():
        empty = next((r for r, s in enumerate(cells) if not s), None)
        if empty is not None:
            raise ValueError(f"{path}: column {c!r}, {columns.where(int(cols.rows[empty]))}: empty value")
    corr = values["correct"]
    bad_c = np.flatnonzero((corr != 0) & (corr != 1))
    if bad_c.size:
        raise ValueError(f"{path}: column 'correct' must be 0 or 1; {columns.where(int(cols.rows[bad_c[0]]))} "
                         f"has {float(corr[bad_c[0]])}")
    for c in ("latency_s", "tokens"):
        bad_v = np.flatnonzero(values[c] <= 0)
        if bad_v.size:
            raise ValueError(f"{path}: column {c!r} must be > 0; {columns.where(int(cols.rows[bad_v[0]]))} "
                             f"has {float(values[c][bad_v[0]])}")
    config_ids, meta = [], {}
    inst_ids = sorted(set(text["instance_id"]))
    inst_pos = {q: n for n, q in enumerate(inst_ids)}
    for r, cid in enumerate(text["config_id"]):
        if cid not in meta:
            config_ids.append(cid)
            meta[cid] = dict(config_id=cid, model=text["model"][r], temperature=float(values["temperature"][r]),
                             max_tokens=int(values["max_tokens"][r]), prompt=text["prompt"][r])
    K, N = len(config_ids), len(inst_ids)
    cpos = {c: k for k, c in enumerate(config_ids)}
    k_of = np.array([cpos[c] for c in text["config_id"]])
    n_of = np.array([inst_pos[q] for q in text["instance_id"]])
    seen = np.zeros((K, N), int)
    np.add.at(seen, (k_of, n_of), 1)
    dup = np.argwhere(seen > 1)
    if dup.size:
        k, n = dup[0]
        raise ValueError(f"{path}: config {config_ids[k]!r} has instance {inst_ids[n]!r} {seen[k, n]} times")
    miss = np.argwhere(seen == 0)
    if miss.size:
        k, n = miss[0]
        raise ValueError(f"{path}: config {config_ids[k]!r} lacks instance {inst_ids[n]!r} "
                         f"({int((seen == 0).sum())} (config, instance) pairs missing; "
                         "every config needs every instance)")
    tables = {}
    for c in ("correct", "latency_s", "tokens"):
        tables[c] = np.full((K, N), np.nan)
        tables[c][k_of, n_of] = values[c]
    return ConfigLogs(tuple(meta[c] for c in config_ids), tuple(inst_ids), tables["correct"],
                      tables["latency_s"], tables["tokens"], path, False)


def write_logs(logs: ConfigLogs, path) -> None:
    """Write logs in the long CSV format read by :func:`load_logs` (full float precision; ``.gz``: gzip, no
    timestamp).

    Args:
      logs: the :class:`ConfigLogs` to write.
      path: the output path.

    Returns:
      None.
    """
    path = os.fspath(path)
    with (open(path, "wb") if not path.endswith(".gz") else gzip.GzipFile(path, "wb", mtime=0)) as raw, \
            io.TextIOWrapper(raw, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for k, cfg in enumerate(logs.configs):
            for n, q in enumerate(logs.instance_ids):
                w.writerow([cfg["config_id"], cfg["model"], repr(float(cfg["temperature"])), cfg["max_tokens"],
                            cfg["prompt"], q, repr(float(logs.correct[k, n])), repr(float(logs.latency[k, n])),
                            repr(float(logs.tokens[k, n]))])


def bundled_logs(dataset: str, seed=None) -> ConfigLogs:
    """The bundled **simulated** ``"gsm8k"`` / ``"piqa"`` stand-in (written by
    experiments/cost_aware/simulated_logs.py).

    Args:
      dataset: ``"gsm8k"`` or ``"piqa"``.
      seed: optional generator seed; must be the bundled file's (:data:`BUNDLED_SEEDS`).

    Returns:
      The :class:`ConfigLogs` (cached), ``simulated = True``.

    Raises:
      ValueError: an unknown dataset or another seed.
    """
    if dataset not in DATASETS:
        raise ValueError(f"env.dataset must be 'gsm8k', 'piqa' (simulated) or a path to a .csv log, got {dataset!r}")
    if seed is not None and int(seed) != BUNDLED_SEEDS[dataset]:
        raise ValueError(f"env.seed = {seed}: the bundled {dataset} stand-in has generator seed "
                         f"{BUNDLED_SEEDS[dataset]}; write logs of another seed with "
                         "experiments/cost_aware/simulated_logs.py "
                         "--seed N and give their path as env.dataset")
    return _bundled(dataset)


@functools.cache
def _bundled(dataset: str) -> ConfigLogs:
    """The bundled stand-in of ``dataset``, read once a process."""
    logs = load_logs(DATA_DIR / f"{dataset}_simulated.csv.gz")
    return ConfigLogs(logs.configs, logs.instance_ids, logs.correct, logs.latency, logs.tokens,
                      f"simulated {dataset}-like stand-in (generator seed {BUNDLED_SEEDS[dataset]})", True)


def identification_subset(logs: ConfigLogs) -> np.ndarray:
    """Indices of the 14-arm subset: 7 common models x temperatures {0.5, 1.0}, 128 tokens, direct.

    Args:
      logs: the :class:`ConfigLogs`.

    Returns:
      ``(14,)`` int numpy configuration indices, model by model, temperature 0.5 then 1.0.

    Raises:
      ValueError: one of the 14 configurations is missing or repeated.
    """
    idx = []
    for model in COMMON_MODELS:
        for T in IDENT_TEMPERATURES:
            hit = [k for k, c in enumerate(logs.configs) if c["model"] == model and abs(c["temperature"] - T) < 1e-9
                   and c["max_tokens"] == IDENT_MAX_TOKENS and c["prompt"] == IDENT_PROMPT]
            if len(hit) != 1:
                raise ValueError(f"identification subset: expected one config for model={model!r}, temperature={T}, "
                                 f"max_tokens={IDENT_MAX_TOKENS}, prompt={IDENT_PROMPT!r}; found {len(hit)}")
            idx.append(hit[0])
    return np.array(idx)


# --------------------------------------------------------------------------------------------
# Preprocessing (Appendix A)
# --------------------------------------------------------------------------------------------

class Prepared(NamedTuple):
    """Evaluation-split tables (K, N_eval) and profiling statistics, costs normalized by ``c_max``."""

    acc: np.ndarray
    eff: np.ndarray
    cost: np.ndarray  # realized normalized cost per evaluation instance, clipped to [., 1]
    det_cost: np.ndarray  # (K,) profiling mean tokens / c_max
    means: np.ndarray  # (K, 2) evaluation-split means of (accuracy, efficiency)
    mean_cost: np.ndarray  # (K,) evaluation-split mean of the realized normalized cost
    tau5: float
    tau95: float
    c_max: float
    prof_tokens: np.ndarray  # (K,) profiling mean tokens (raw)


C_MAX_READINGS = ("instance", "arm_mean")


def preprocess(logs: ConfigLogs, n_profile: int = 200, split_seed: int = 0, c_max: str = "instance") -> Prepared:
    """Split, efficiency normalization and cost normalization of Appendix A (``c_max``: a reading).

    Args:
      logs: the :class:`ConfigLogs`, ``K`` configurations and ``N`` instances.
      n_profile: number of profiling instances, in ``[1, N - 1]``.
      split_seed: seed of the profiling/evaluation split.
      c_max: the reading of ``c_max``, one of :data:`C_MAX_READINGS`.

    Returns:
      The :class:`Prepared` tables, ``(K, N - n_profile)`` each on the evaluation split.

    Raises:
      ValueError: ``n_profile`` out of range or degenerate profiling latencies.
    """
    N = len(logs.instance_ids)
    if not 0 < n_profile < N:
        raise ValueError(f"n_profile must be in [1, {N - 1}] for {N} instances, got {n_profile}")
    perm = np.random.default_rng(split_seed).permutation(N)
    prof, ev = np.sort(perm[:n_profile]), np.sort(perm[n_profile:])
    tau5, tau95 = np.percentile(logs.latency[:, prof], [5, 95])
    if not tau95 > tau5:
        raise ValueError(f"profiling latencies are degenerate: tau5={tau5}, tau95={tau95}")
    lat = logs.latency[:, ev]
    eff = np.clip((1.0 / lat - 1.0 / tau95) / (1.0 / tau5 - 1.0 / tau95), 0.0, 1.0)
    acc = logs.correct[:, ev]
    prof_tokens = logs.tokens[:, prof].mean(1)
    c_max = float(logs.tokens[:, prof].max() if c_max == "instance" else prof_tokens.max())
    cost = np.minimum(logs.tokens[:, ev] / c_max, 1.0)
    means = np.stack([acc.mean(1), eff.mean(1)], 1)
    return Prepared(acc, eff, cost, prof_tokens / c_max, means, cost.mean(1), float(tau5), float(tau95), c_max,
                    prof_tokens)


LLMParams = ReplayParams  # the evaluation table (K, N_eval, 3) of (accuracy, efficiency, charged cost)

def _logs_for(dataset: str, seed, split_seed: int, n_profile: int) -> ConfigLogs:
    if dataset in DATASETS:
        return bundled_logs(dataset, seed)
    if dataset.endswith((".csv",) + tuple(".csv" + c[0] for c in columns.COMPRESSIONS)) or os.path.sep in dataset:
        return load_logs(dataset)
    raise ValueError(f"env.dataset must be 'gsm8k', 'piqa' (simulated) or a path to a .csv log, got {dataset!r}")


def build_instance(dataset="gsm8k", subset="all", rho=8.0, costs="random", seed=None, split_seed=0,
                   n_profile=200, c_max="instance") -> EnvInstance:
    """Build the bootstrap-replay :class:`EnvInstance` (with its budget, horizon, costs and cost floor).

    Args:
      dataset: ``"gsm8k"``, ``"piqa"`` (simulated) or a path to a CSV of real logs.
      subset: ``"all"`` or ``"identification14"``.
      rho: budget ratio, ``B = rho * K * c_bar``.
      costs: ``"random"`` (realized token charges) or ``"deterministic"`` (``c_i / c_max`` each pull).
      seed: optional generator seed of a bundled dataset.
      split_seed: seed of the profiling/evaluation split.
      n_profile: number of profiling instances.
      c_max: the reading of ``c_max``, one of :data:`C_MAX_READINGS`.

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance`: 2 objectives (accuracy, efficiency), reference point
      0, budget, horizon ``T_B``, costs and cost floor; ``info`` holds the preprocessing statistics.

    Raises:
      ValueError: an option out of range, naming it and what is allowed.
    """
    if subset not in ("all", "identification14"):
        raise ValueError(f"env.subset must be 'all' or 'identification14', got {subset!r}")
    if costs not in ("random", "deterministic"):
        raise ValueError(f"env.costs must be 'random' or 'deterministic', got {costs!r}")
    if c_max not in C_MAX_READINGS or (c_max == "arm_mean" and costs != "deterministic"):
        raise ValueError(f"env.c_max must be 'instance', or 'arm_mean' with costs = 'deterministic'; "
                         f"got c_max = {c_max!r} with costs = {costs!r}")
    rho = float(rho)
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"env.rho must be a positive number, got {rho}")
    logs = _logs_for(dataset, seed, int(split_seed), int(n_profile))
    if subset == "identification14":
        logs = logs.select(identification_subset(logs))
    prep = preprocess(logs, n_profile=int(n_profile), split_seed=int(split_seed), c_max=c_max)
    K = logs.num_configs
    if costs == "random":
        cost_table = prep.cost
        lam = float(cost_table.min())
        mean_costs = prep.mean_cost
    else:
        cost_table = np.broadcast_to(prep.det_cost[:, None], prep.cost.shape)
        lam = float(prep.det_cost.min())
        mean_costs = prep.det_cost
    validate_costs(cost_table, lam)
    validate_costs(prep.det_cost, min(lam, float(prep.det_cost.min())))
    c_bar = float(prep.det_cost.mean())
    budget = rho * K * c_bar  # Appendix A: rho = B / (K c_bar), in units of c_max tokens
    validate_budget(budget, lam)
    horizon = int(math.ceil(budget / lam)) + 1  # T_B of Section 4.1
    params = LLMParams(jnp.asarray(np.stack([prep.acc, prep.eff, cost_table], -1), jnp.float32))
    env = replay_env(K, 2)
    label = f"{dataset} (simulated)" if logs.simulated else os.path.basename(dataset)
    pareto = strict_pareto_mask_np(prep.means)
    info = dict(
        budget=budget, rho=rho, c_bar=c_bar, c_max=prep.c_max, tau5=prep.tau5, tau95=prep.tau95,
        prof_tokens=prep.prof_tokens, pareto=pareto, label=label, simulated=logs.simulated,
        source=logs.source, costs=costs, configs=logs.configs, budget_tokens=budget * prep.c_max,
        arms=tuple(str(c["config_id"]) for c in logs.configs), cost_scale=prep.c_max, cost_name="tokens",
    )
    return EnvInstance(env=env, params=params, means=prep.means, mean_costs=np.asarray(mean_costs),
                       static_key=("llm_configs", K, int(prep.acc.shape[1])), info=info,
                       budget=budget, cost_floor=lam, alloc_costs=prep.det_cost, min_costs=cost_table.min(1),
                       budget_ratio=rho, ref=np.zeros(2), horizon=horizon)


@register_env(
    "llm_configs",
    doc="Bootstrap replays of per-instance LLM configuration logs (Xue et al., Appendix A); "
    "dataset 'gsm8k'/'piqa' are SIMULATED stand-ins, or a CSV path of real logs.",
    keys=("dataset", "subset", "rho", "costs", "seed", "split_seed", "n_profile", "c_max"),
)
def build(section: dict, config: dict) -> EnvInstance:
    """Registry builder for ``[env] kind = "llm_configs"``.

    Args:
      section: the spec's ``[env]`` table (the keyword arguments of :func:`build_instance`).
      config: the whole spec (not read).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance` of :func:`build_instance`.
    """
    opts = {k: v for k, v in section.items() if k != "kind"}
    return build_instance(**opts)
