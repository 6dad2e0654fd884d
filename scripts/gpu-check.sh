#!/usr/bin/env bash
# One command on a machine with a GPU (and network for the first install): start vLLM
# with priority scheduling, run the SDK's vLLM tests against it, stop it.
#
#   scripts/gpu-check.sh                      # Qwen/Qwen2.5-0.5B-Instruct from the Hub
#   MODEL=/models/my-model scripts/gpu-check.sh
#
# Uses .venv (made by `make test` or `make demo`; made here otherwise) and installs
# vllm into it when missing. Exit status: the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
PORT="${PORT:-8765}"
PY=.venv/bin/python

if [ ! -x "$PY" ]; then
    python3 -m venv .venv
    "$PY" -m pip install --quiet -e '.[dev,serve]'
fi
"$PY" -c 'import vllm' 2>/dev/null || "$PY" -m pip install --quiet vllm

scripts/vllm-serve-and-test.sh "$PY" "$(mktemp -t vllm-XXXX.log)" "$PORT" \
    --model "$MODEL" --served-model-name seam-check --max-model-len 4096
