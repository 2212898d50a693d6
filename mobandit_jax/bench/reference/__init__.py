"""Plain numpy per-round loops of the algorithms: independent references for tests and benchmarks."""
