"""Array math with no policy knowledge: hypervolume, KL-UCB, dominance."""
from .choice import argmax_random_tie, uniform_from_mask  # noqa: F401  (re-exported)
from .dominance import (  # noqa: F401  (re-exported)
    cone_bounds,
    cone_dominance,
    cone_optimal_mask,
    dominates,
    normalized_projections,
    pareto_front_mask,
    pareto_layers,
    preference_gaps,
    validate_cone,
)
from .hypervolume import box_volume, greedy_hv_subset, hv_contributions, hypervolume  # noqa: F401  (re-exported)
from .kl import kl_bernoulli, klucb_lower, klucb_upper, klucb_upper_refine  # noqa: F401  (re-exported)
