"""The runner: a TOML spec (or a dict) -> a plan -> chunked, resumable execution -> a run folder.

``spec`` parses and validates, ``plugins`` imports user modules a spec names, ``plans`` builds every
environment, policy and metric set through the registries, ``execution`` compiles and runs the chunks,
``run_folder`` owns the run folder (identity, chunks, atomic I/O); ``devices``, ``workers``,
``sharding``, ``cache`` and ``runtime`` place and tune the work; ``cli`` is the ``mobandit`` command,
``api`` is ``mb.run`` and ``reproduce`` reruns the papers. Nothing here holds algorithm logic.
"""
