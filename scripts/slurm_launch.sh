#!/usr/bin/env bash
# Multi-host sweep on Slurm: one task per node, every task runs its share of the seed chunks.
#
#   sbatch scripts/slurm_launch.sh configs/topk_pareto/d5.toml runs/topk_pareto/d5
#
# jax.distributed.initialize() reads the Slurm environment (coordinator = first node, process
# count and index from SLURM_NTASKS / SLURM_PROCID). Each process shards its chunk's seeds over its
# local GPUs; chunks are dealt round-robin over processes and written to the shared run directory
# (it must be on a filesystem every node sees); process 0 merges them into summary.json.
# Re-submitting the same command resumes from the chunks already on disk.
#SBATCH --job-name=mobandit
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --time=01:00:00
set -euo pipefail
CONFIG=${1:?usage: sbatch scripts/slurm_launch.sh CONFIG OUTDIR}
OUT=${2:?usage: sbatch scripts/slurm_launch.sh CONFIG OUTDIR}
srun mobandit run "$CONFIG" --out "$OUT" --distributed --quiet
