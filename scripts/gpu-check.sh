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

LOG="$(mktemp -t vllm-XXXX.log)"
"$PY" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL" --served-model-name seam-check --port "$PORT" \
    --scheduling-policy priority --enable-prompt-tokens-details --max-num-seqs 4 --max-model-len 4096 \
    >"$LOG" 2>&1 &
VLLM=$!
trap 'kill $VLLM 2>/dev/null || true; wait $VLLM 2>/dev/null || true' EXIT

for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 $VLLM 2>/dev/null; then echo "vLLM exited; its log: $LOG" >&2; tail -50 "$LOG" >&2; exit 1; fi
    sleep 1
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || { echo "vLLM did not become healthy; see $LOG" >&2; exit 1; }

SEAM_VLLM_URL="http://127.0.0.1:$PORT" SEAM_VLLM_MODEL=seam-check \
    "$PY" -m pytest -q -p no:cacheprovider tests/engines/test_vllm.py
