"""The generated region of docs/bench.md: the page renders as ratios to a bare Streamlit page."""

from __future__ import annotations

from results_docs.common import Results, bench_result, goal_verdict


def page_renders(results: Results) -> str:
    """`bench/page_renders.py`: each dashboard page's first render and the slider steps, in seconds and as
    ratios to the bare Streamlit page measured in the same run, the goals, the load average."""
    bench = bench_result("page_renders")
    before, after = (" / ".join(f"{value:.2f}" for value in bench[key]) for key in ("loadavg_before", "loadavg_after"))
    over = bench["first_render_over_bare"]
    renders = ", ".join(f"{page} {seconds:.1f} s ({over[page]:.2f}x)"
                        for page, seconds in bench["first_render_s"].items())
    bare = list(bench["bare_first_render_s"].values())  # the bare page's render just before each page's
    steps = ", ".join(f"{seconds:.2f}" for seconds in bench["steps_s"])
    step_ratios = ", ".join(f"{value:.1f}" for value in bench["steps_over_bare_rerun"])
    bare_steps = ", ".join(f"{seconds:.3f}" for seconds in bench["bare_steps_s"])
    goals = bench["goals"]
    rounds = bench["rounds"]
    return (f"its first renders (medians of {rounds} round{'s' if rounds > 1 else ''}), each also as a ratio to the "
            f"bare page's render timed just before it: {renders}; the "
            f"bare Streamlit page's (`bench/bare_page.py`) {bare[0]:.1f} s on its first visit (before the Overview), "
            f"{min(bare[1:]):.1f} to {max(bare[1:]):.1f} s on its revisits; the Pareto slider's "
            f"{len(bench['steps_s'])} steps {steps} s ({step_ratios}x the bare rerun), median "
            f"{bench['step_median_s']:.2f} s, {bench['step_median_over_bare_rerun']:.1f}x the bare rerun (the median "
            f"of the bare slider's {len(bench['bare_steps_s'])} steps {bare_steps} s: "
            f"{bench['bare_step_median_s']:.3f} s); {len(bench['paced_steps_s'])} paced steps (a pause before each key "
            f"press) {', '.join(f'{seconds:.2f}' for seconds in bench['paced_steps_s'])} s, median "
            f"{bench['paced_step_median_s']:.2f} s, {bench['paced_step_median_over_bare_rerun']:.1f}x the bare rerun; "
            f"goals (issue #51): "
            f"{goal_verdict(goals['first_render_over_bare'], 'first renders at most', 'the bare page')}, "
            f"{goal_verdict(goals['step_median_over_bare_rerun'], 'median step at most', 'the bare rerun')}; "
            f"load average {before} before, {after} after (1 / 5 / 15 min)")
