#!/usr/bin/env bash
# Set up FORGE on a fresh machine: virtual environment, torch (local CPU wheel first), the embedded
# runtime (llama-cpp-python, compiled here), the package with its test, Ray and gateways extras, the benchmark import
# and the tiny test model. Safe to run again. Prints how long each phase took (bench/newcomer.py
# reads those lines).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${FORGE_VENV:-.venv}
PYTHON=${PYTHON:-python3}
PIP=("$VENV/bin/python" -m pip install --quiet -c constraints.txt)
PHASE_START=$SECONDS
phase_done() {  # phase_done NAME: one line with the seconds since the previous phase ended
    echo "setup: $1 took $((SECONDS - PHASE_START)) s"
    PHASE_START=$SECONDS
}

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
# torch first and pinned: an unpinned torch would pull several GB of CUDA packages.
"${PIP[@]}" "torch==2.13.0"
phase_done "venv and torch"

# llama-cpp-python compiles llama.cpp: only what FORGE loads. No multimodal library, and not the
# common library its CMakeLists forces on (scripts/llama_library_only.cmake): about half the files.
# On x86-64, portable AVX2 code instead of -march=native, whose AVX-512/AMX paths die with SIGILL on
# machines (VMs) that report AMX without enabling it.
LLAMA_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE_BEFORE=$PWD/scripts/llama_library_only.cmake"
if [ "$(uname -m)" = x86_64 ]; then
    LLAMA_ARGS="$LLAMA_ARGS -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
fi
export CMAKE_ARGS="${CMAKE_ARGS:-$LLAMA_ARGS}"
# A build made before the AVX2 rule (installed, or a wheel pip kept in its cache) is rebuilt once.
if "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit('AMX_INT8 = 1' not in llama_cpp.llama_print_system_info().decode())" 2>/dev/null; then
    echo "setup: rebuilding llama-cpp-python without AVX-512/AMX (a few minutes)"
    "${PIP[@]}" --no-cache-dir --force-reinstall --no-deps llama-cpp-python
fi
"${PIP[@]}" llama-cpp-python
phase_done "runtime build"

# exactly the versions CI tested (constraints.txt; `bash scripts/refresh_constraints.sh` renews it)
"${PIP[@]}" -e ".[test,ray,gateways]"
# xds-protos ships an older copy of opentelemetry/proto over opentelemetry-proto's (the OTLP exporter
# then fails to import): put opentelemetry-proto's own files back
"${PIP[@]}" --force-reinstall --no-deps opentelemetry-proto
phase_done "packages"

"$VENV/bin/forge" data import
"$VENV/bin/forge" host pull smollm2-135m
phase_done "benchmarks and test model"
echo "setup: done"
