"""``mobandit bench``: throughput of the engine against seed-batched numpy peers, per-seed
reference loops and moocore, measured side by side in one process."""
