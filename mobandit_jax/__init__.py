"""mobandit_jax: a vectorized JAX experiment engine for multi-objective bandits."""
from . import runtime as _runtime

_runtime.configure()  # CPU settings for small per-round kernels (see mobandit_jax.runtime)
from . import metrics, policies, problems  # noqa: F401  (fill the registries)
from .engine import RunParams, batch, make_run, seed_keys
from .kernels import (
    cone_optimal_mask,
    hv_contributions,
    hypervolume,
    klucb_lower,
    klucb_upper,
    normalized_projections,
    pareto_front_mask,
    pareto_layers,
    preference_gaps,
)
from .policies.base import POLICIES, Observation, Policy
from .policies.base import make as make_policy
from .problems.base import ENVS

__version__ = "0.1.0"
