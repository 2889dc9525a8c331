#!/usr/bin/env bash
# Set up FORGE on a fresh machine: virtual environment, torch (local CPU wheel first), the package
# with its test extras, the benchmark import and the embedded models. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${FORGE_VENV:-.venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
# llama-cpp-python compiles llama.cpp: only what FORGE loads (no multimodal library), and on x86-64
# portable AVX2 code instead of -march=native, whose AVX-512/AMX paths die with SIGILL on machines
# (VMs) that report AMX without enabling it.
if [ "$(uname -m)" = x86_64 ]; then
    export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
fi
# torch first and pinned: an unpinned torch would pull several GB of CUDA packages.
"$VENV/bin/python" -m pip install --quiet -c constraints.txt "torch==2.13.0"
# exactly the versions CI tested (constraints.txt; `bash scripts/refresh_constraints.sh` renews it)
"$VENV/bin/python" -m pip install --quiet -c constraints.txt -e ".[test]"
# A build made before the rule above (installed, or a wheel pip kept in its cache) is rebuilt once.
if "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit('AMX_INT8 = 1' not in llama_cpp.llama_print_system_info().decode())" 2>/dev/null; then
    echo "setup: rebuilding llama-cpp-python without AVX-512/AMX (a few minutes)"
    "$VENV/bin/python" -m pip install --quiet --no-cache-dir --force-reinstall --no-deps -c constraints.txt llama-cpp-python
fi

"$VENV/bin/forge" data import
"$VENV/bin/forge" host pull smollm2-135m
echo "setup: done"
