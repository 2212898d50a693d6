"""mobandit_jax: a vectorized JAX experiment engine for multi-objective bandits.

The names below are loaded on first use (PEP 562), so ``import mobandit_jax`` and the modules the
``mobandit`` command needs first (``cli``, ``config``, ``devices``, ``cache``, ``local_workers``,
``results``, ``runtime``) do not import JAX: the command reads its spec and starts its worker
processes before this process imports JAX. Importing
``policies``, ``problems`` or ``metrics`` (or any name from them) fills their registry.
"""
import importlib as _importlib

_EXPORTS = {
    "api": ("run",),
    "run_results": ("Curves", "Results"),
    "engine": ("batch", "make_run", "seed_keys"),
    "kernels": ("cone_optimal_mask", "hv_contributions", "hypervolume", "klucb_lower", "klucb_upper",
                "normalized_projections", "pareto_front_mask", "pareto_layers", "preference_gaps"),
    "policies.base": ("POLICIES",),
    "problems.base": ("ENVS",),
    "types": ("Context", "Env", "EnvInstance", "Identifier", "IdentifyResult", "MetricSet", "Observation", "Policy",
              "RunParams"),
}
_RENAMED = {"make_policy": ("policies.base", "make")}
_HOME = {name: (module, name) for module, names in _EXPORTS.items() for name in names} | _RENAMED

__all__ = sorted(_HOME)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _HOME:
        module, attr = _HOME[name]
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
