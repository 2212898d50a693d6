"""A tiny multi-chunk spec as TOML text, shared by the run-folder, interrupt and CLI error tests."""

TINY_TOML = """\
[experiment]
name = "tiny"
horizon = {horizon}
seeds = {seeds}
chunk = {chunk}
record_every = {record_every}

[env]
kind = "stochastic"
noise = "beta"
concentration = 1.0
means = [[0.2, 0.7, 0.5], [0.6, 0.4, 0.1], [0.55, 0.65, 0.45], [0.3, 0.3, 0.8]]

[preference]
W = [[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]

[[policies]]
name = "prefucb"
label = "PrefUCB"
"""


def tiny_spec(path, horizon=120, seeds=6, chunk=2, record_every=20):
    """Write the tiny spec to ``path`` and return the path."""
    path.write_text(TINY_TOML.format(horizon=horizon, seeds=seeds, chunk=chunk, record_every=record_every))
    return path
