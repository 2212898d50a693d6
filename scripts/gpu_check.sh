#!/usr/bin/env bash
# One prepared GPU check, under 6 minutes on one GPU; every figure goes to one JSON file.
#
#   scripts/gpu_check.sh [OUT_JSON] [--dry-run]
#
# OUT_JSON defaults to $OUT/gpu_check.json when OUT is set, else ./gpu_check.json. Steps, each
# with its own time limit, each recorded (exit status, seconds, output tail) even when it fails:
#   1. install the package with the `cuda` extra (skipped when JAX already sees a GPU);
#   2. the tests marked `gpu` (they skip themselves without a GPU backend);
#   3. engine throughput of PrefUCB, THV-UCB (d = 2) and CoHV-UCB at 1 .. 1,048,576 seeds in
#      powers of 4, each sweep ending at the first seed count that runs out of device memory;
#   4. one full spec, configs/topk_pareto/d5.toml.
# --dry-run: CPU backend, no install, 1 and 4 seeds, 20 rounds, the spec at 2 seeds and 50 rounds
# (checks the script itself on a machine without a GPU).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PYTHON="${PYTHON:-python3}"
DRY=0
OUT_JSON=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -*) echo "error: unknown option $arg (allowed: --dry-run)" >&2; exit 2 ;;
    *) OUT_JSON="$arg" ;;
  esac
done
if [ -z "$OUT_JSON" ]; then
  if [ -n "${OUT:-}" ]; then OUT_JSON="$OUT/gpu_check.json"; else OUT_JSON="$PWD/gpu_check.json"; fi
fi
mkdir -p "$(dirname "$OUT_JSON")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"

if [ "$DRY" = 1 ]; then
  export JAX_PLATFORMS=cpu
  SEEDS="1,4"; ROUNDS=20; SPEC_ARGS=(--seeds 2 --set experiment.horizon=50)
  LIMIT_INSTALL=0; LIMIT_TESTS=120; LIMIT_BENCH=300; LIMIT_SPEC=300
else
  SEEDS="1,4,16,64,256,1024,4096,16384,65536,262144,1048576"; ROUNDS=200; SPEC_ARGS=()
  LIMIT_INSTALL=60; LIMIT_TESTS=40; LIMIT_BENCH=45; LIMIT_SPEC=110
fi

# step NAME LIMIT_S COMMAND...: run with a time limit, record exit status, seconds and output tail
step() {
  local name="$1" limit="$2"; shift 2
  local t0; t0=$(date +%s%N)
  echo "== $name (limit ${limit} s): $*" >&2
  timeout --kill-after=5 "$limit" "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  local t1; t1=$(date +%s%N)
  echo "$rc $(( (t1 - t0) / 1000000 ))" >"$WORK/$name.status"
  tail -n 5 "$WORK/$name.log" >&2
}

if [ "$DRY" = 0 ] && ! "$PYTHON" -c 'import jax, sys; sys.exit(jax.default_backend() != "gpu")' 2>/dev/null; then
  step install "$LIMIT_INSTALL" "$PYTHON" -m pip install -q -e ".[cuda,test]"
fi
"$PYTHON" -c 'import jax; print(jax.default_backend(), jax.devices())' >"$WORK/backend.log" 2>&1
step tests "$LIMIT_TESTS" "$PYTHON" -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_gpu.py
for algo in prefucb thv_d2 cohv; do
  step "bench_$algo" "$LIMIT_BENCH" "$PYTHON" -m mobandit_jax.runner.cli bench --engine-only --algorithms "$algo" \
    --seeds "$SEEDS" --rounds "$ROUNDS" --json "$WORK/bench_$algo.json"
done
step spec "$LIMIT_SPEC" "$PYTHON" -m mobandit_jax.runner.cli run configs/topk_pareto/d5.toml --out "$WORK/topk_pareto/d5" --quiet \
  --no-cache "${SPEC_ARGS[@]}"

"$PYTHON" - "$WORK" "$OUT_JSON" "$DRY" <<'PY'
import json, pathlib, subprocess, sys
work, out, dry = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
def status(name):
    path = work / f"{name}.status"
    if not path.exists():
        return None
    rc, ms = path.read_text().split()
    log = (work / f"{name}.log").read_text(errors="replace")
    return {"rc": int(rc), "timed_out": int(rc) in (124, 137), "seconds": int(ms) / 1000,
            "output_tail": log[-3000:]}
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20).stdout.strip()
except (OSError, subprocess.SubprocessError):
    gpu = None
report = {"dry_run": dry, "gpu": gpu, "backend": (work / "backend.log").read_text().strip(),
          "steps": {name: status(name) for name in ("install", "tests", "bench_prefucb", "bench_thv_d2", "bench_cohv",
                                                     "spec")},
          "bench": {}, "spec": None}
for algo in ("prefucb", "thv_d2", "cohv"):
    path = work / f"bench_{algo}.json"
    if path.exists():
        data = json.loads(path.read_text())
        best = max(data["policies"], key=lambda r: r["seed_rounds_per_s"], default=None)
        report["bench"][algo] = {**data, "best": best}
summary = work / "topk_pareto/d5" / "summary.json"
if summary.exists():
    records = json.loads(summary.read_text())["records"]
    report["spec"] = {"config": "configs/topk_pareto/d5.toml", "records": len(records),
                      "seconds": report["steps"]["spec"]["seconds"]}
pathlib.Path(out).write_text(json.dumps(report, indent=1))
print(f"wrote {out}")
PY
