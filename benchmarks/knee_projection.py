"""Where a generation step turns throughput-bound: measured knees, and knees projected from
datasheets for common models, GPUs, engines and completion lengths (a projection).

    python benchmarks/knee_projection.py

Writes benchmarks/results/knee_projection.{json,md}: the knee of each shipped step-cost curve
(frontier_rft.step_cost.curve, measured) and `roofline.project_knee` for every model of
`roofline.MODELS` on every GPU of `roofline.GPUS` under each engine of `roofline.ENGINES`, at
256 prompt tokens and completions of 24 to 4,096 tokens.
"""

from __future__ import annotations

from frontier_rft.bench.scripts import command_line, script_parser, write_outputs
from frontier_rft.step_cost import CURVES, load_curve
from frontier_rft.step_cost.roofline import ENGINES, GPUS, MODELS, project_knee

PROMPT = 256
LENGTHS = (24, 256, 1024, 4096)


def main() -> int:
    args = script_parser(__doc__ or "").parse_args()
    measured = {}
    lines = [
        "# Where a generation step turns throughput-bound",
        "",
        f"    {command_line()}",
        "",
        "## Measured (the reference trainer's step: generation and update)",
        "",
        "| curve | device | model | completion tokens | knee (rows a step) |",
        "|---|---|---|---:|---:|",
    ]
    for name in CURVES:
        curve = load_curve(name)
        for length in curve.lengths:
            knee = curve.knee(length)
            measured[f"{name}:{length}"] = {"rows": knee.rows, "censored": knee.censored}
            lines.append(
                f"| `{name}` | {curve.device_name} | {curve.model_name} | {length} "
                f"| {knee.describe()} |"
            )
    lines += [
        "",
        "Rule (`StepCostCurve.knee`): the rows at which a one-call step's seconds reach twice "
        "the smallest measured step's. Below it a step's seconds barely follow its rows (the run "
        "pays in steps); beyond it they grow with rows (the run pays in rows).",
        "",
        f"## Projected from datasheets ({PROMPT} prompt tokens; rows = sequences decoded together)",
        "",
        "A projection, not a measurement: bandwidth and dense bf16 throughput from datasheets, "
        "KV-cache bytes from the models' configs, engine costs as `roofline.ENGINES` states "
        "(eager: calibrated on the one H200 measurement; graphs: assumed).",
        "",
        "| model | GPU | engine | " + " | ".join(f"{n} tokens" for n in LENGTHS) + " |",
        "|---|---|---|" + "---:|" * len(LENGTHS),
    ]
    projected = {}
    for m_key, model in MODELS.items():
        for g_key, gpu in GPUS.items():
            for e_key, engine in ENGINES.items():
                knees = [project_knee(gpu, model, engine, PROMPT, n) for n in LENGTHS]
                projected[f"{m_key}:{g_key}:{e_key}"] = knees
                lines.append(
                    f"| {model.name} | {gpu.name} | {e_key} | "
                    + " | ".join(f"{k:,.0f}" for k in knees)
                    + " |"
                )
    lines += ["", *(f"- `{k}`: {e.basis}" for k, e in ENGINES.items())]
    payload = {"command": command_line(), "measured": measured, "projected": projected}
    write_outputs(args.out, "knee_projection", payload, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
