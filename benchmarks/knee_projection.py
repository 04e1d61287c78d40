"""Where a generation call turns throughput-bound: measured knees, and knees projected from
datasheets for common models, GPUs, engines and completion lengths (a projection), beside the
ridge point practitioners quote.

    python benchmarks/knee_projection.py

Writes benchmarks/results/knee_projection.{json,md}: the knee of each shipped step-cost curve
(frontier_rft.step_cost.curve, measured) and `roofline.project_knee` for every model of
`roofline.MODELS` on every GPU of `roofline.GPUS` under each engine of `roofline.ENGINES`, at
256 prompt tokens and completions of 24 to 4,096 tokens, with `roofline.ridge_rows`.
"""

from __future__ import annotations

from frontier_rft.bench.scripts import command_line, script_parser, write_outputs
from frontier_rft.step_cost import CURVES, load_curve
from frontier_rft.step_cost.roofline import ENGINES, GPUS, MODELS, project_knee, ridge_rows

PROMPT = 256
LENGTHS = (24, 256, 1024, 4096)

DEFINITIONS = [
    "**The knee** (one rule for a measured curve and a projection: `StepCostCurve.knee`, "
    "`roofline.project_knee`): the rows of one generation call at which its seconds reach twice "
    "its fixed cost, the seconds it pays at zero rows (a measured curve's: the line through its "
    "two smallest measured calls, extended to zero rows; a projection's: the decode step's "
    "weights read and launches). That is where the rows' own seconds equal the fixed seconds: "
    "for t(r) = a + b r, r = a / b exactly, the fixed-vs-per-row crossover. Below it most of a "
    "call's seconds are paid whatever its rows (the run pays in steps); beyond it most follow "
    "the rows (it pays in rows). Generation alone is measured and projected (a trainer's update "
    "runs in micro-batches whose number follows the rows). The rule before this one was 'twice "
    "the smallest measured step's seconds' over generation and update, which for an affine cost "
    "is a / b plus twice the smallest measured rows (8 on the CPU curve): it put the CPU knees "
    "at 37, 23 and 20 rows (24, 256 and 1,024 tokens); the generation call's crossover, the "
    "knee now, is at 34, 10 and 8 rows.",
    "",
    "**A censored knee** ('>= N rows'): the largest measured call stays under twice the fixed "
    "cost, so the knee is at least that call, a bound. A call beyond it is judged by the same "
    "rule on the curve's extrapolation (its last segment's slope) and said to be extrapolated: "
    "512 rows at 256 tokens on the H200 curve cost 1.00x its fixed seconds (its generation is "
    "flat from 16 to 256 rows), under the rule's 2x: steps, not 'beyond the knee'. The H200's "
    "measured knees are censored (>= 1,024 rows at 24 tokens, >= 256 at 256): its 1,024-row "
    "step is the largest measured H200 step, not its knee.",
    "",
    "**The ridge point** (`roofline.ridge_rows`) is the rows at which a decode step's compute "
    "term overtakes its memory term (arithmetic intensity = FLOP/s over bytes/s). It says where "
    "a row's marginal cost turns to its full FLOPs, not where the rows' seconds outweigh the "
    "fixed ones. Where a row's KV read is cheap next to its FLOPs (a large model, a short "
    "context) the knee lies above the ridge (Qwen2.5-7B, CUDA graphs, 24 tokens: 682 against "
    "421 on an H100, 335 against 181 on an A100; under a pure roofline about twice the "
    "weights-only ridge), because at the ridge a call still costs its floor; where the KV read "
    "is nearly as dear as the FLOPs or dearer (a longer context, a small model) the knee lies "
    "below the ridge (Qwen2.5-7B at 1,024 tokens: 452 against 2,041) or there is no ridge at "
    "all (4,096 tokens: the call turns linear in rows while memory-bound; knee 151). The knee "
    "is the one used because the currency question is which part of a call's seconds "
    "dominates, and because it is the one rule a measured curve (which shows no ridge) and a "
    "projection can both be read by.",
]
"""The definitions, said once: the page's and (quoted) docs/results/device_cost.md's."""


def _ridge(value: float | None) -> str:
    return "none" if value is None else f"{value:,.0f}"


def main() -> int:
    args = script_parser(__doc__ or "").parse_args()
    measured = {}
    lines = [
        "# Where a generation call turns throughput-bound",
        "",
        f"    {command_line()}",
        "",
        *DEFINITIONS,
        "",
        "## Measured (the reference trainer's generation call)",
        "",
        "| curve | device | model | completion tokens | fixed cost (s) | knee (rows a call) |",
        "|---|---|---|---:|---:|---|",
    ]
    for name in CURVES:
        curve = load_curve(name)
        for length in curve.lengths:
            knee = curve.knee(length)
            measured[f"{name}:{length}"] = {
                "rows": knee.rows,
                "censored": knee.censored,
                "fixed_s": knee.fixed_s,
            }
            lines.append(
                f"| `{name}` | {curve.device_name} | {curve.model_name} | {length} "
                f"| {knee.fixed_s:.3f} | {knee.describe()} |"
            )
    lines += [
        "",
        f"## Projected from datasheets ({PROMPT} prompt tokens; rows = sequences decoded together)",
        "",
        "A projection, not a measurement: bandwidth and dense bf16 throughput from datasheets, "
        "KV-cache bytes from the models' configs, engine costs as `roofline.ENGINES` states "
        "(eager: calibrated on the one H200 measurement; graphs: assumed). Each cell: the knee "
        "/ the ridge point (the ridge does not depend on the engine; 'none': a row's KV read "
        "outweighs its FLOPs at that length).",
        "",
        "| model | GPU | engine | " + " | ".join(f"{n} tokens" for n in LENGTHS) + " |",
        "|---|---|---|" + "---:|" * len(LENGTHS),
    ]
    projected = {}
    ridges = {}
    for m_key, model in MODELS.items():
        for g_key, gpu in GPUS.items():
            ridge = [ridge_rows(gpu, model, PROMPT, n) for n in LENGTHS]
            ridges[f"{m_key}:{g_key}"] = ridge
            for e_key, engine in ENGINES.items():
                knees = [project_knee(gpu, model, engine, PROMPT, n) for n in LENGTHS]
                projected[f"{m_key}:{g_key}:{e_key}"] = knees
                lines.append(
                    f"| {model.name} | {gpu.name} | {e_key} | "
                    + " | ".join(
                        f"{k:,.0f} / {_ridge(r)}" for k, r in zip(knees, ridge, strict=True)
                    )
                    + " |"
                )
    lines += ["", *(f"- `{k}`: {e.basis}" for k, e in ENGINES.items())]
    payload = {
        "command": command_line(),
        "definitions": DEFINITIONS,
        "measured": measured,
        "projected": projected,
        "ridge": ridges,
    }
    write_outputs(args.out, "knee_projection", payload, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
