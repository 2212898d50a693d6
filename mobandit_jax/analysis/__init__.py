"""Reading results: :class:`~mobandit_jax.analysis.results.Results`, the generic report, plots,
statistics and ``mobandit compare``. Nothing here runs an experiment."""
