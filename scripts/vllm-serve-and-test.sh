#!/usr/bin/env bash
# Shared by gpu-check.sh and vllm-cpu-check.sh: start vLLM's OpenAI server with what the
# tests need (priority scheduling, prompt-token details, four sequences at a time), wait
# until it is healthy, run tests/engines/test_vllm.py against it, stop it.
#
#   scripts/vllm-serve-and-test.sh PYTHON LOG PORT [vLLM arguments: --model ... --served-model-name NAME ...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$1" LOG="$2" PORT="$3"
shift 3
NAME=""
for ((i = 1; i <= $#; i++)); do
    if [ "${!i}" = "--served-model-name" ]; then j=$((i + 1)); NAME="${!j}"; fi
done
[ -n "$NAME" ] || { echo "--served-model-name is required" >&2; exit 2; }

"$PY" -m vllm.entrypoints.openai.api_server --port "$PORT" \
    --scheduling-policy priority --enable-prompt-tokens-details --max-num-seqs 4 "$@" \
    >"$LOG" 2>&1 &
VLLM=$!
trap 'kill $VLLM 2>/dev/null || true; wait $VLLM 2>/dev/null || true' EXIT

for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 $VLLM 2>/dev/null; then echo "vLLM exited; its log: $LOG" >&2; tail -50 "$LOG" >&2; exit 1; fi
    sleep 1
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || { echo "vLLM did not become healthy; see $LOG" >&2; exit 1; }

SEAM_VLLM_URL="http://127.0.0.1:$PORT" SEAM_VLLM_MODEL="$NAME" \
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/engines/test_vllm.py
