#!/usr/bin/env bash
# One prepared GPU check, about 5 minutes on one GPU: the GPU figures and the same figures on this machine's
# CPU cores, side by side in one run, every figure into one folder.
#
#   scripts/gpu_check.sh [OUT_DIR] [--dry-run]
#
# OUT_DIR defaults to $OUT when OUT is set, else ./gpu_check. After the install (the `gpu` extra's packages where
# JAX sees no GPU, else the project alone), three lanes run at once, each step with its own time limit (and all
# before the deadline of GPU_CHECK_SECONDS, default 480), each recorded in OUT_DIR/gpu_check.json (exit status,
# seconds, output tail) even when it fails:
#   timing (cores 0-1):  the PrefUCB profile (mobandit_jax.bench.profile, also OUT_DIR/profile.json); PrefUCB
#                        (K = 42, d = 7, M = 2) at 1,024 .. 1,048,576 seeds; the hypervolume and KL-UCB kernels in
#                        batches; THV-UCB d = 5 at 256 and 4,096 seeds;
#   checks (cores 2-3):  the tests marked `gpu` and the GPU subset (kernels, engine, sharding, precision); once the
#                        PrefUCB figures are taken, the quickstart in float32 and with --x64 and
#                        configs/cost_aware/identification.toml on the GPU;
#   cpu (cores 4-):      the same benchmarks (PrefUCB up to 131,072 seeds) and runs with JAX_PLATFORMS=cpu.
# Then each GPU run's summary is classed against its CPU run's as `mobandit reproduce --check` classes numbers
# (scripts/summary_agreement.py).
# --dry-run: every lane on the CPU backend, no install, small seed counts and kernels, the identification spec
# at 4 seeds and its smallest and largest budgets (rho = 20 and 5000: 10 programs to compile, not 36, so that the
# run ends within its step's limit on a loaded machine) and the quickstart at 2 seeds and 300 rounds (checks the
# script itself on a machine without a GPU).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
PYTHON="${PYTHON:-python3}"
DRY=0
OUT_DIR=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -*) echo "error: unknown option $arg (allowed: --dry-run)" >&2; exit 2 ;;
    *) OUT_DIR="$arg" ;;
  esac
done
OUT_DIR="${OUT_DIR:-${OUT:-$PWD/gpu_check}}"
mkdir -p "$OUT_DIR"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
CORES=$(nproc)

if [ "$DRY" = 1 ]; then
  GPU_ENV=(JAX_PLATFORMS=cpu)
  PREF_GPU="1,4"; PREF_CPU="1,4"; THV="2"; ROUNDS=20; CPU_ROUNDS=20; BATCHES="200,2000"; PROFILE=(--seeds 8 --rounds 20)
  ID_ARGS=(--seeds 4 --set "sweep.env.rho=[20, 5000]"); QUICK_ARGS=(--seeds 2 --set experiment.horizon=300)
  L_TESTS=600; L_BENCH=300; L_RUN=300; L_THV=300; export GPU_CHECK_SECONDS=${GPU_CHECK_SECONDS:-3600}
else
  GPU_ENV=()
  PREF_GPU="1024,16384,131072,1048576"; PREF_CPU="1024,16384,131072"; THV="256,4096"; ROUNDS=500; CPU_ROUNDS=200
  BATCHES="20000,200000,2000000"; PROFILE=(--seeds 131072 --rounds 200)
  ID_ARGS=(); QUICK_ARGS=()
  L_TESTS=150; L_BENCH=75; L_RUN=90; L_THV=150
fi
if [ "$CORES" -ge 8 ] && command -v taskset >/dev/null; then
  ON_TIMING_LANE=(taskset -c 0-1); ON_CHECKS_LANE=(taskset -c 2-3); ON_CPU_LANE=(taskset -c "4-$((CORES - 1))")
  CPU_CORES=$((CORES - 4))
else
  ON_TIMING_LANE=(); ON_CHECKS_LANE=(); ON_CPU_LANE=(); CPU_CORES=$CORES
fi

# Every step ends before the whole check's deadline (GPU_CHECK_SECONDS, default 480), leaving time for the report.
DEADLINE=$(( $(date +%s) + ${GPU_CHECK_SECONDS:-480} - 40 ))

# step NAME LIMIT_S COMMAND...: run with a time limit; record exit status, seconds and the log (exit 125:
# skipped, the deadline being too close)
step() {
  local name="$1" limit="$2"; shift 2
  local left=$(( DEADLINE - $(date +%s) ))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 5 ]; then
    echo "125 0" >"$WORK/$name.status"; echo "skipped: the check's deadline" >"$WORK/$name.log"; return
  fi
  local t0; t0=$(date +%s%N)
  echo "== $name (limit ${limit} s): $*" >&2
  timeout --kill-after=5 "$limit" "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  echo "$rc $(( ($(date +%s%N) - t0) / 1000000 ))" >"$WORK/$name.status"
  echo "== $name: exit $rc" >&2
}
MB=("$PYTHON" -m mobandit_jax.cli)

install_project() {  # the device may have no package index: the project alone when the gpu extra's are there
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
  fi
  if "$PYTHON" -c 'import jax, sys; sys.exit(jax.default_backend() != "gpu")'; then
    "$PYTHON" -m pip install -q --no-index --no-build-isolation --no-deps -e . || echo "(running from the source tree)"
  else
    "$PYTHON" -m pip install -q -e ".[gpu,test]"
  fi
  "$PYTHON" -c 'import jax; print(jax.__version__, jax.default_backend(), jax.devices())'
}
[ -d .whl ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"

timing_lane() {  # the GPU figures, on a GPU that only the checks lane's tests share
  [ ${#GPU_ENV[@]} -gt 0 ] && export "${GPU_ENV[@]}"
  step profile "$L_BENCH" "${ON_TIMING_LANE[@]}" "$PYTHON" -m mobandit_jax.bench.profile "${PROFILE[@]}" \
    --json "$OUT_DIR/profile.json"
  step gpu_prefucb "$L_BENCH" "${ON_TIMING_LANE[@]}" "${MB[@]}" bench --parts engine --algorithms prefucb \
    --seeds "$PREF_GPU" --rounds "$ROUNDS" --json "$WORK/gpu_prefucb.json"
  touch "$WORK/timed"
  step gpu_kernels "$L_BENCH" "${ON_TIMING_LANE[@]}" "${MB[@]}" bench --parts kernels --kernel-batches "$BATCHES" \
    --json "$WORK/gpu_kernels.json"
  step gpu_thv_d5 "$L_THV" "${ON_TIMING_LANE[@]}" "${MB[@]}" bench --parts engine --algorithms thv_d5 \
    --seeds "$THV" --rounds 300 --repeat 1 --json "$WORK/gpu_thv_d5.json"
}

checks_lane() {  # the GPU tests, then the GPU runs once the PrefUCB figures are taken; memory taken as needed
  [ ${#GPU_ENV[@]} -gt 0 ] && export "${GPU_ENV[@]}"
  export XLA_PYTHON_CLIENT_PREALLOCATE=false
  step tests "$L_TESTS" "${ON_CHECKS_LANE[@]}" "$PYTHON" -m pytest -q -p no:cacheprovider -rs -m "not slow" \
    tests/test_gpu.py tests/kernels/test_kl.py tests/kernels/test_hypervolume.py tests/test_engine.py \
    tests/analysis/test_precision.py tests/runner/test_sharding.py
  while [ ! -e "$WORK/timed" ] && [ "$(date +%s)" -lt "$DEADLINE" ]; do sleep 1; done
  step gpu_quickstart "$L_RUN" "${ON_CHECKS_LANE[@]}" "${MB[@]}" run configs/quickstart.toml \
    --out "$WORK/gpu_quickstart" --quiet --no-cache "${QUICK_ARGS[@]}"
  step gpu_quickstart_x64 "$L_RUN" "${ON_CHECKS_LANE[@]}" "${MB[@]}" --x64 run configs/quickstart.toml \
    --out "$WORK/gpu_quickstart_x64" --quiet --no-cache "${QUICK_ARGS[@]}"
  step gpu_identification "$L_RUN" "${ON_CHECKS_LANE[@]}" "${MB[@]}" run configs/cost_aware/identification.toml \
    --out "$WORK/gpu_identification" --quiet --no-cache "${ID_ARGS[@]}"
}

cpu_lane() {  # the same figures and runs on the CPU backend
  export JAX_PLATFORMS=cpu
  step cpu_prefucb "$L_BENCH" "${ON_CPU_LANE[@]}" "${MB[@]}" bench --parts engine --algorithms prefucb \
    --seeds "$PREF_CPU" --rounds "$CPU_ROUNDS" --repeat 2 --json "$WORK/cpu_prefucb.json"
  step cpu_thv_d5 "$L_BENCH" "${ON_CPU_LANE[@]}" "${MB[@]}" bench --parts engine --algorithms thv_d5 \
    --seeds "$THV" --rounds 300 --repeat 1 --json "$WORK/cpu_thv_d5.json"
  step cpu_kernels "$L_BENCH" "${ON_CPU_LANE[@]}" "${MB[@]}" bench --parts kernels --kernel-batches "$BATCHES" \
    --json "$WORK/cpu_kernels.json"
  step cpu_quickstart "$L_RUN" "${ON_CPU_LANE[@]}" "${MB[@]}" run configs/quickstart.toml \
    --out "$WORK/cpu_quickstart" --quiet --no-cache "${QUICK_ARGS[@]}"
  step cpu_quickstart_x64 "$L_RUN" "${ON_CPU_LANE[@]}" "${MB[@]}" --x64 run configs/quickstart.toml \
    --out "$WORK/cpu_quickstart_x64" --quiet --no-cache "${QUICK_ARGS[@]}"
  step cpu_identification "$L_RUN" "${ON_CPU_LANE[@]}" "${MB[@]}" run configs/cost_aware/identification.toml \
    --out "$WORK/cpu_identification" --quiet --no-cache "${ID_ARGS[@]}"
}

export -f install_project  # so that `timeout` runs it in a shell of its own
export PYTHON
if [ "$DRY" = 0 ]; then step install 90 bash -c install_project; fi
( timing_lane ) &
LANES=($!)
( checks_lane ) &
LANES+=($!)
( cpu_lane ) &
LANES+=($!)
wait "${LANES[@]}"
for run in identification quickstart quickstart_x64; do
  step "agree_$run" 15 "$PYTHON" scripts/summary_agreement.py "$WORK/cpu_$run" "$WORK/gpu_$run" \
    --json "$WORK/agree_$run.json"
done

"$PYTHON" - "$WORK" "$OUT_DIR" "$DRY" "$CPU_CORES" <<'PY'
import json, pathlib, subprocess, sys
work, out, dry, cpu_cores = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
def read(name):
    path = work / name
    return json.loads(path.read_text()) if path.exists() else None
steps = {}
for path in sorted(work.glob("*.status")):
    rc, ms = path.read_text().split()
    log = path.with_suffix(".log").read_text(errors="replace")
    steps[path.stem] = {"rc": int(rc), "timed_out": int(rc) in (124, 137), "seconds": int(ms) / 1000,
                        "output_tail": log[-4000:]}
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20).stdout.strip()
except (OSError, subprocess.SubprocessError):
    gpu = None
report = {"dry_run": dry, "gpu": gpu, "cpu_lane_cores": cpu_cores, "steps": steps,
          "bench": {name: read(f"{name}.json") for name in
                    ("gpu_prefucb", "cpu_prefucb", "gpu_thv_d5", "cpu_thv_d5", "gpu_kernels", "cpu_kernels")},
          "agreement": {run: read(f"agree_{run}.json") for run in ("identification", "quickstart", "quickstart_x64")},
          "runs": {}}
for side in ("gpu", "cpu"):
    for run in ("identification", "quickstart", "quickstart_x64"):
        timing = read(f"{side}_{run}/timing.json")
        report["runs"][f"{side}_{run}"] = timing
(out / "gpu_check.json").write_text(json.dumps(report, indent=1))
for name, st in steps.items():
    print(f"step {name:22s} exit {st['rc']:3d} {st['seconds']:7.1f} s")
for name, data in report["bench"].items():
    for row in (data or {}).get("policies", []):
        print(f"{name:12s} {row['algorithm']:28s} {row['seeds']:8d} seeds {row['seed_rounds_per_s']:16,.0f} seed-rounds/s "
              f"compile {row['compile_s']:.1f} s")
    for row in (data or {}).get("hypervolume", []) + (data or {}).get("klucb", []):
        print(f"{name:12s} {row}")
    for note in (data or {}).get("out_of_memory", []):
        print(f"{name:12s} out of memory: {note}")
for run, counts in report["agreement"].items():
    print(f"agreement {run}: {counts and {k: v for k, v in counts.items() if k != 'different_lines'}}")
print(f"wrote {out / 'gpu_check.json'}")
PY
