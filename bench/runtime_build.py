"""Two builds of llama-cpp-python on the same model, in the same run: prefill and decode speed.

`--build DIR` is a build to compare with the one installed in this environment (DIR holds its
`llama_cpp` package, e.g. a wheel unzipped: `python -m zipfile -e llama_cpp_python-*.whl DIR`). Each
round loads the model in a new process per build (alternating, so a busy machine weighs on both
alike) and measures, on two threads: prefill, prompt tokens per second of a fresh ~600-token FORGE-like
prompt; decode, generated tokens per second of 64 tokens after it. Prints one JSON line with each
build's median over the rounds, the ratios new / installed (goal: both >= 0.95, i.e. no worse within
noise) and the load average before and after.
Run: `.venv/bin/python bench/runtime_build.py --build DIR [--model qwen2.5-coder-1.5b] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from forge_core import config
from forge_core.hosts.models import model_path

# Run in a process of its own per build: prints {"prefill_tps": ..., "decode_tps": ...}.
MEASURE = r"""
import json, sys, time
import llama_cpp
model = llama_cpp.Llama(sys.argv[1], n_ctx=2048, n_threads=2, n_threads_batch=2, verbose=False, seed=0)
passage = ("The river rises in the northern hills and flows south through three towns before it reaches "
           "the sea; its valley was settled early and the oldest bridge dates from the twelfth century. ")
prompt = model.tokenize(("Passages:\n" + passage * 24 + "\nQuestion: where does the river rise?\nAnswer:").encode())
started = time.perf_counter()
model.eval(prompt)
prefill_s = time.perf_counter() - started
generated, started = 0, time.perf_counter()
for token in model.generate(prompt, temp=0.0, reset=False):
    generated += 1
    if generated == 64:
        break
decode_s = time.perf_counter() - started
print(json.dumps({"prompt_tokens": len(prompt), "prefill_tps": len(prompt) / prefill_s,
                  "decode_tps": generated / decode_s, "library": llama_cpp.__file__}))
"""


def measure(model: Path, build: Path | None) -> dict:
    env = dict(os.environ)
    if build is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(build), env.get("PYTHONPATH")]))
    run = subprocess.run([sys.executable, "-c", MEASURE, str(model)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True, help="Directory holding the other build's llama_cpp.")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not (args.build / "llama_cpp" / "lib").is_dir():
        raise SystemExit(f"no llama_cpp/lib under {args.build}: unzip a llama-cpp-python wheel there")
    model, load_before = model_path(args.model, config.models_dir()), os.getloadavg()
    runs: dict[str, list[dict]] = {"installed": [], "new": []}
    for _ in range(args.rounds):
        runs["installed"].append(measure(model, None))
        runs["new"].append(measure(model, args.build))
    medians = {name: {key: round(statistics.median(run[key] for run in found), 1)
                      for key in ("prefill_tps", "decode_tps")} for name, found in runs.items()}
    ratios = {key: round(medians["new"][key] / medians["installed"][key], 3) for key in ("prefill_tps", "decode_tps")}
    print(json.dumps({"model": args.model, "rounds": args.rounds, "prompt_tokens": runs["new"][0]["prompt_tokens"],
                      "median": medians, "new_over_installed": ratios,
                      "goal_met": all(value >= 0.95 for value in ratios.values()),
                      "libraries": {name: found[0]["library"] for name, found in runs.items()},
                      "load_average_before": [round(x, 2) for x in load_before],
                      "load_average_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
