"""mobandit_jax: a vectorized JAX experiment engine for multi-objective bandits.

The layout is the architecture, in layers that import only downwards (``tests/test_import_graph.py``): on top
``cli``, the ``mobandit`` command; below it the parts it drives: ``runner`` (spec, plans, execution, the run folder,
devices, workers, sharding, cache, runtime, its subcommands), ``study`` (live ask/tell studies), ``bench``
(benchmarks and their numpy peers) and ``analysis`` (``Results``, reports, plots, statistics, compare); below them
the core (``types``, ``engine``, ``kernels``, ``policies``, ``problems``, ``metrics``, ``registry``, the one
registry type, ``plugins``, the loader of user modules, ``experiment_spec``, the typed experiment spec,
``spec_tables``, the spec tables runs and studies share, and ``digest``).

The names below are loaded on first use (PEP 562), so ``import mobandit_jax`` imports no JAX, and
neither do the modules the ``mobandit`` command needs first (``cli``, ``plugins``, ``runner.commands``,
``runner.spec``, ``runner.devices``, ``runner.cache``, ``runner.workers``, ``runner.run_folder``):
the command reads its spec and starts its worker processes before this process imports JAX.
Importing ``policies``, ``problems`` or ``metrics`` fills their registry; the registry names below
(``register_policy``, ``POLICIES``, ...) load all three first, so a registration sees every built-in name.
"""
import importlib as _importlib

_EXPORTS = {
    "runner.api": ("run",),
    "analysis.results": ("Curves", "Recommendation", "Results"),
    "engine": ("batch", "make_run", "seed_keys"),
    "errors": ("ConfigError",),
    "experiment_spec": ("ExperimentSpec", "GridPoint"),
    "study": ("Study", "StudyError"),
    "kernels": ("cone_optimal_mask", "hv_contributions", "hypervolume", "klucb_lower", "klucb_upper",
                "normalized_projections", "pareto_front_mask", "pareto_layers", "preference_gaps"),
    "registry": ("ENVS", "FAMILIES", "POLICIES", "Registry", "RegistryError", "make_env", "make_metrics",
                 "make_policy", "register_env", "register_family", "register_policy"),
    "types": ("Context", "Env", "EnvInstance", "Final", "Identifier", "IdentifyResult", "Metric", "MetricSet",
              "Observation", "Policy", "RunParams"),
}
_HOME = {name: (module, name) for module, names in _EXPORTS.items() for name in names}
_FILLED = ("policies", "problems", "metrics")  # imported before a registry name is handed out

__all__ = sorted(_HOME)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _HOME:
        module, attr = _HOME[name]
        if module == "registry":
            for package in _FILLED:
                _importlib.import_module(f"{__name__}.{package}")
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    try:  # a submodule, e.g. mb.runtime
        return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(__all__))
