"""The runner: a TOML spec (or a dict) -> a plan -> chunked, resumable execution -> a run folder.

``spec`` parses and validates (the user modules a spec names are imported by :mod:`mobandit_jax.plugins`),
``plans`` builds every environment, policy and metric set through the registries, ``execution`` compiles and
runs the chunks,
``run_folder`` owns the run folder (identity, chunks, atomic I/O); ``devices``, ``workers``,
``sharding``, ``cache`` and ``runtime`` place and tune the work; ``commands`` are the runner's subcommands of the
``mobandit`` command (:mod:`mobandit_jax.cli`),
``api`` is ``mb.run`` and ``reproduce`` reruns the papers. Nothing here holds algorithm logic.
"""
