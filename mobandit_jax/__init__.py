"""mobandit_jax: a vectorized JAX experiment engine for multi-objective bandits."""
from . import metrics, policies, problems, runtime  # noqa: F401  (fill the registries)
from .api import run
from .run_results import Curves, Results
from .engine import batch, make_run, seed_keys
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
from .policies.base import POLICIES
from .policies.base import make as make_policy
from .problems.base import ENVS
from .types import (
    Context,
    Env,
    EnvInstance,
    Identifier,
    IdentifyResult,
    MetricSet,
    Observation,
    Policy,
    RunParams,
)

__version__ = "0.1.0"
