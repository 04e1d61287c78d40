"""The figures the README and the evidence summary quote, produced from the committed reports.

A page marks each figure it quotes, `<!--fig:NAME-->TEXT<!--/fig-->` (invisible when the
Markdown is rendered); `FIGURES` says where each comes from: a committed report (a bench-rl
`<stem>_full.json`, itself rebuilt from the run ledger by its own command and checked by
tests/test_bench_ledger_reports.py), an entry of it and a value of its summary, and how it is
written. `scripts/page_figures.py` prints every figure, writes them into the pages
(`--write`) or says which differ (`--check`); tests/test_page_figures.py fails when a page
holds a figure that differs from what the command prints, or a figure with an interval that
no marker names, so a page cannot keep a stale figure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "CHECKED",
    "FIGURES",
    "PAGES",
    "CurveFigure",
    "Figure",
    "NoiseFigure",
    "PlannerFigure",
    "compute",
    "differences",
    "render",
    "unmarked",
]

PAGES = ("README.md", "docs/results/summary.md")
"""The pages whose figures are all produced here (relative to the repository): every figure
they quote is marked."""
CHECKED = ("docs/results/device_cost.md",)
"""Pages whose marked figures are checked too (they also quote measured step costs, unmarked)."""
MARK = re.compile(r"<!--fig:(?P<name>[\w.@-]+)-->(?P<text>.*?)<!--/fig-->", re.S)
FIGURE_LIKE = re.compile(r"[−+-]?\d+\.\d+x? \[[−+-]?\d|\b\d+\.\d+x\b")
"""What reads as a quoted figure: a value with an interval, or a ratio ('0.78x')."""

Row = Mapping[str, Any]
Format = Callable[[Any], str]


def _num(value: float, digits: int, signed: bool) -> str:
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", "−")


def interval(digits: int = 3, signed: bool = True, unit: str = "") -> Format:
    """'+0.002 [−0.014, +0.009]' from a {mean, ci} cell."""

    def fmt(cell: Any) -> str:
        lo, hi = cell["ci"]
        mean = _num(cell["mean"], digits, signed) + unit
        return f"{mean} [{_num(lo, digits, signed)}, {_num(hi, digits, signed)}]"

    return fmt


def mean_only(digits: int = 2, unit: str = "x") -> Format:
    """'0.82x' from a {mean} cell."""
    return lambda cell: _num(cell["mean"], digits, False) + unit


def median_ratio(digits: int = 2) -> Format:
    """'0.41x [0.24, 0.60]', with '(k/n reached)' where some seed never did, from a
    metrics.median_ratio cell ('not reached by half' where its median is beyond the runs)."""

    def fmt(cell: Any) -> str:
        n, k = cell["n"], cell["reached"]
        counted = "" if k == n else f" ({k}/{n} reached)"
        if cell["ratio"] is None:
            return f"not reached by half{counted}"
        lo, hi = cell["ci"]
        ends = ", ".join("beyond" if v is None else _num(v, digits, False) for v in (lo, hi))
        return f"{_num(cell['ratio'], digits, False)}x [{ends}]{counted}"

    return fmt


def signed_mean(digits: int = 3) -> Format:
    """'−0.029' from a {mean} cell."""
    return lambda cell: _num(cell["mean"], digits, True)


def count(cell: Any) -> str:
    """An integer, as is."""
    return f"{int(cell):,}"


@dataclass(frozen=True)
class Figure:
    """One quoted figure: where it comes from and how it is written."""

    report: str
    """The committed report's stem (benchmarks/results/<stem>_full.json)."""
    label: str
    """The entry whose summary row holds it ('' for the summary itself)."""
    path: tuple[str, ...]
    """Keys from the row (or the summary) to the value."""
    fmt: Format
    """How the page writes it."""

    def value(self, results: Path) -> str:
        """The figure's text, read from the committed report."""
        node: Any = _report(results, self.report)["summary"]
        if self.label:
            node = node["labels"][self.label]
        for key in self.path:
            node = node[key]
        return self.fmt(node)


@dataclass(frozen=True)
class CurveFigure:
    """A step-cost figure: the seconds of a one-call step of `rows` over one of `base_rows`
    on a shipped curve (generation and update, `length` decode steps), e.g. '1.6x'."""

    curve: str
    """A shipped curve (step_cost.CURVES)."""
    rows: int
    """The larger step's rows."""
    base_rows: int
    """The smaller step's rows."""
    length: int = 24
    """Decode steps of each call."""

    def value(self, results: Path) -> str:
        """The ratio, one decimal."""
        from frontier_rft.step_cost import StepShape, load_curve

        curve = load_curve(self.curve)
        big = curve.step_seconds(StepShape((self.rows,), self.length, self.rows))
        small = curve.step_seconds(StepShape((self.base_rows,), self.length, self.base_rows))
        return f"{big / small:.1f}x"


@dataclass(frozen=True)
class NoiseFigure:
    """A noise-scale fit (benchmarks/noise_scale.py's <stem>.json), as the page quotes it:
    'N_noise 477 [218, 576] rows (S_min 12.0 [10.1, 20.7] steps)' or 'withdrawn: ...'."""

    stem: str
    """The fit's results file stem."""
    axis: str = "prompts"
    """Which growth of the step ('prompts' or 'rollouts')."""

    def value(self, results: Path) -> str:
        """The fit, or why it is withdrawn."""
        fit = json.loads((results / f"{self.stem}.json").read_text("utf-8"))["fits"][self.axis]
        return fit_text(fit)


def fit_text(fit: Mapping[str, Any]) -> str:
    """A noise-scale fit (noise_fit's dict) as a page quotes it, or why it is withdrawn."""
    if fit["withdrawn"]:
        return "withdrawn: " + "; ".join(fit["withdrawn"])
    if fit.get("n_noise_ci") is None:  # the fit's slope defines no noise scale
        return "N_noise undefined"
    (lo, hi), (slo, shi) = fit["n_noise_ci"], fit["s_min_ci"]
    return (
        f"N_noise {fit['n_noise']:,.0f} [{lo:,.0f}, {hi:,.0f}] rows "
        f"(S_min {fit['s_min']:.1f} [{slo:.1f}, {shi:.1f}] steps)"
    )


@dataclass(frozen=True)
class PlannerFigure:
    """A figure of the planned step against the fixed grid (benchmarks/planner_vs_grid.py's
    <stem>.json): on `axis`, the planned entry's time over the best fixed entry's
    (`over_best`), over another entry's (`over:<label>`), the best fixed entry's name
    (`best`), its pass@1 at equal cost against uniform (`equal`); or the meter's run-average
    noise scale (`meter`, any axis), or the steps-to-target fit set beside it (`fit:<its name>`,
    e.g. `fit:prompts, to plateau`; any axis), how fast that fit's steps fell (`slope:<its
    name>`: the log-log slope and its CI), or the slope a law gives through its rows
    (`law:<its name>|<i>|<sgd or adam_kept>`, at the i-th noise scale of planner_vs_grid's
    `slopes`: the meters', then the fit's own)."""

    stem: str
    """The results file stem."""
    axis: str
    """The currency (device_report.AXES key)."""
    key: str
    """Which figure: over_best, over:<label>, best, equal or meter."""

    def value(self, results: Path) -> str:
        """The figure's text."""
        data = json.loads((results / f"{self.stem}.json").read_text("utf-8"))
        if self.key == "meter":
            m = data["meter"]
            return f"{m['b_simple']:,.0f} [{m['ci'][0]:,.0f}, {m['ci'][1]:,.0f}] rows"
        if self.key.startswith("fit:"):
            return fit_text(data["fits"][self.key.removeprefix("fit:")])
        if self.key.startswith("slope:"):
            m = data["slopes"][self.key.removeprefix("slope:")]["measured"]
            lo, hi = m["ci"]
            return f"{_num(m['slope'], 2, False)} [{_num(lo, 2, False)}, {_num(hi, 2, False)}]"
        if self.key.startswith("law:"):
            fit, index, kind = self.key.removeprefix("law:").split("|")
            law = data["slopes"][fit]["laws"][int(index)]
            return f"{_num(law[kind], 2, False)} at {law['b_noise']:,.0f} rows"
        a = data["comparison"]["axes"][self.axis]
        if self.key == "best":
            return str(a["best"])
        if self.key == "equal":
            return interval()(a["equal_pass1"])
        cell = a["over_best"]
        if self.key.startswith("over:"):
            label = self.key.removeprefix("over:")
            cell = {**a["over_each"], **a["over_others"]}[label]
        return median_ratio()(cell)


@dataclass(frozen=True)
class ScriptFigure:
    """A figure from a benchmark script's results (benchmarks/results/<stem>.json, e.g.
    benchmarks/lr_step_price.py's): the value at `path`, written by `fmt`."""

    stem: str
    """The results file stem."""
    path: tuple[str, ...]
    """Keys from the file's top level to the value."""
    fmt: Format
    """How the page writes it."""

    def value(self, results: Path) -> str:
        """The figure's text."""
        node: Any = json.loads((results / f"{self.stem}.json").read_text("utf-8"))
        for key in self.path:
            node = node[key]
        return self.fmt(node)


AnyFigure = Figure | CurveFigure | NoiseFigure | PlannerFigure | ScriptFigure


@cache
def _report(results: Path, stem: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((results / f"{stem}_full.json").read_text("utf-8"))
    return out


def _cells(
    prefix: str, report: str, label: str, cells: Mapping[str, tuple[tuple[str, ...], Format]]
) -> dict[str, Figure]:
    return {f"{prefix}.{k}": Figure(report, label, path, fmt) for k, (path, fmt) in cells.items()}


P1 = ("final_minus_uniform", "eval/pass@1")
LAST = ("last_quarter_pass1_minus_uniform",)


def _schedule_cells(k: str) -> dict[str, tuple[tuple[str, ...], Format]]:
    """What a mode is quoted by at its run's end: rollouts and steps, pass@1, last quarter,
    pass@k, each against uniform on the same seeds."""
    return {
        "rollouts": (("rollouts_vs_uniform",), mean_only()),
        "steps": (("steps_run",), mean_only(0, "")),
        "pass1": (P1, interval()),
        "last": (LAST, interval()),
        "passk": (("final_minus_uniform", f"eval/{k}"), interval()),
    }


def _step_size_cells() -> dict[str, tuple[tuple[str, ...], Format]]:
    """What a larger step is quoted by: its median cost to uniform's plateau in projected H200
    seconds, in rollouts and in steps, and its pass@1 at equal H200 seconds and passes."""
    return {
        "h200": (("device", "to_plateau_h200"), median_ratio()),
        "rollouts_to": (("device", "to_plateau_rollouts"), median_ratio()),
        "steps_to": (("device", "to_plateau_steps"), median_ratio()),
        "equal_h200": (("device", "equal_h200_pass1"), interval()),
        "equal_passes": (("device", "equal_passes_pass1"), interval()),
    }


FIGURES: dict[str, AnyFigure] = {
    "noise.std.plateau": NoiseFigure("noise_scale_std_plateau"),
    "noise.std.half": NoiseFigure("noise_scale_std_half"),
    "noise.ffl4.plateau": NoiseFigure("noise_scale_format_lr4_plateau"),
    "noise.ffl4.half": NoiseFigure("noise_scale_format_lr4_half"),
    "h200.1024_over_16": CurveFigure("h200", 1024, 16),
    # SmolLM2-135M on an H200, 2 epochs
    **_cells("smollm2.kept", "smollm2_gpu_2epoch", "skip-kept", _schedule_cells("pass@4")),
    **_cells(
        "smollm2.fewer_steps",
        "smollm2_gpu_fewer_steps",
        "skip-fewer-steps",
        _schedule_cells("pass@4"),
    ),
    # fast-format-lr4: the CPU regime closest to SmolLM2
    **_cells(
        "ffl4.kept",
        "real_rl_format_lr4_512_2epoch_all_20seeds",
        "skip-kept",
        _schedule_cells("pass@8"),
    ),
    **_cells(
        "ffl4.fewer_steps",
        "real_rl_format_lr4_fewer_steps_20seeds",
        "skip-fewer-steps",
        _schedule_cells("pass@8"),
    ),
    "std1280.kept.cpu_timed": Figure(
        "real_rl_bill_1280_2epoch", "skip-kept", ("cpu_vs_uniform",), interval(2, False, "x")
    ),
    "smollm2.kept.wall": Figure(
        "smollm2_gpu_2epoch", "skip-kept", ("wall_vs_uniform",), interval(2, False, "x")
    ),
    **_cells(
        "ffl4.audit",
        "real_rl_format_lr4_512_2epoch_all_20seeds",
        "skip-audit-kept",
        _schedule_cells("pass@8"),
    ),
    "ffl4.audit.block0": Figure(
        "real_rl_format_lr4_512_2epoch_all_10seeds", "skip-audit-kept", P1, signed_mean()
    ),
    "ffl4.audit.block1": Figure(
        "real_rl_format_lr4_512_2epoch_all_10to19", "skip-audit-kept", P1, signed_mean()
    ),
    "ffl4.kept.fresh_last": Figure(
        "real_rl_format_lr4_512_2epoch_all_10to19", "skip-kept", LAST, interval()
    ),
    "ffl4.fewer_steps.block0": Figure(
        "real_rl_format_lr4_fewer_steps", "skip-fewer-steps", P1, interval()
    ),
    **_cells(
        "std1280x3.kept", "real_rl_skip_kept_3epoch_15seeds", "skip-kept", _schedule_cells("pass@8")
    ),
    **_cells(
        "std1280x4.kept", "real_rl_skip_kept_1280_15seeds", "skip-kept", _schedule_cells("pass@8")
    ),
    **_cells(
        "std512x11.kept", "real_rl_skip_kept_512_10seeds", "skip-kept", _schedule_cells("pass@8")
    ),
    **_cells(
        "std1280.backfill",
        "real_rl_predict_backfill_fresh_1280_2epoch",
        "skip-predict-kept-w50-backfill",
        _schedule_cells("pass@8"),
    ),
    **_cells(
        "std1280.screen4", "real_rl_screen4_1280_2epoch", "screen4", _schedule_cells("pass@8")
    ),
    # the standard CPU testbed, kept steps at 2 epochs
    **_cells(
        "std1280.kept", "real_rl_skip_kept_2epoch_25seeds", "skip-kept", _schedule_cells("pass@8")
    ),
    **_cells(
        "std512.kept",
        "real_rl_skip_kept_512_2epoch_10seeds",
        "skip-kept",
        _schedule_cells("pass@8"),
    ),
    **_cells(
        "std.fewer_steps",
        "real_rl_std_fewer_steps",
        "skip-fewer-steps",
        _schedule_cells("pass@8"),
    ),
    # every selector with full batches, many epochs
    **_cells("std512.greso", "real_rl_standard_cpu", "greso", _schedule_cells("pass@8")),
    **_cells("std1280.greso", "real_rl_standard_cpu_1280", "greso", _schedule_cells("pass@8")),
    # first epoch: rescue, in the H200's currency
    **{
        f"{size}.rescue.equal_h200": Figure(
            f"real_rl_first_epoch_{size.removeprefix('std')}_2epoch",
            "skip-predict-kept-w50-rescue",
            ("device", "equal_h200_pass1"),
            interval(),
        )
        for size in ("std512", "std1280")
    },
    # hard_groups on fast-format-lr4
    **_cells(
        "ffl4.hard8",
        "real_rl_format_lr4_hard_groups",
        "uniform-hard8",
        {
            **_schedule_cells("pass@8"),
            "equal_h200": (("device", "equal_h200_pass1"), interval()),
        },
    ),
    **{
        f"gpu512.{label}.pass1": Figure("real_rl_gpu", label, P1, interval())
        for label in ("dapo", "frontier", "sec", "bots", "pcl", "dots", "prioritized")
    },
    **{
        f"gpu1280.{label}.pass1": Figure("real_rl_gpu_pool1280", label, P1, interval())
        for label in ("bots", "dots")
    },
}
"""Every figure a page may quote, by name."""


def step_size_figures(report: str, prefix: str, labels: Sequence[str]) -> dict[str, Figure]:
    """The larger-step figures of a step-size report (`labels` its larger steps), and how many
    seeds it pairs."""
    out: dict[str, Figure] = {
        f"{prefix}.seeds": Figure(report, "", ("seeds",), lambda seeds: str(len(seeds)))
    }
    for label in labels:
        out.update(_cells(f"{prefix}.{label}", report, label, _step_size_cells()))
    return out


def planner_figures(
    stem: str, prefix: str, beside: Mapping[str, str] | None = None
) -> dict[str, PlannerFigure]:
    """A planner comparison's figures (benchmarks/planner_vs_grid.py's `stem`): per currency
    its time over the best fixed entry's, that entry, its pass@1 at equal cost, and its time
    over each entry named in `beside` (figure name: label); then the meter."""
    keys = {"over_best": "over_best", "best": "best", "equal": "equal"}
    keys.update({name: f"over:{label}" for name, label in (beside or {}).items()})
    out = {
        f"{prefix}.{axis}.{name}": PlannerFigure(stem, axis, key)
        for axis in ("h200", "cpu")
        for name, key in keys.items()
    }
    out[f"{prefix}.meter"] = PlannerFigure(stem, "h200", "meter")
    return out


def lr_price_figures(stem: str, prefix: str) -> dict[str, ScriptFigure]:
    """A two-rate comparison's figures (benchmarks/lr_step_price.py's `stem`): per rate
    (`low`, `high`) the larger step's pass@1 over the smaller's at equal projected seconds,
    its steps to the common target over the smaller's, each arm's final pass@1; and the bound
    on that ratio at the higher rate where the smaller step's median lies beyond its runs."""
    cells = (
        ("equal_cpu", ("equal_pass1", "cpu"), interval()),
        ("equal_h200", ("equal_pass1", "h200"), interval()),
        ("steps", ("common_steps", "ratio"), median_ratio()),
        ("uniform", ("final_pass1", "uniform"), interval(3, False)),
        ("b64", ("final_pass1", "uniform-b64"), interval(3, False)),
    )
    out = {
        f"{prefix}.{rate}.{name}": ScriptFigure(stem, (rate, *path), fmt)
        for rate in ("low", "high")
        for name, path, fmt in cells
    }
    out[f"{prefix}.high.steps_below"] = ScriptFigure(
        stem, ("high", "common_steps", "below"), lambda v: f"{v:.2f}x"
    )
    return out


FIGURES.update(
    {
        **step_size_figures(
            "real_rl_format_lr4_grid", "ffl4", ("uniform-b32", "uniform-b64", "uniform-b128")
        ),
        **step_size_figures(
            "real_rl_std_step_size_e4",
            "std",
            ("uniform-b32", "uniform-b48", "uniform-b128", "dapo-onecall"),
        ),
        **step_size_figures("real_rl_format_lr4_planner", "plan", ("uniform-auto",)),
        **step_size_figures(
            "real_rl_format_lr4_planner_grid10", "g10", ("uniform-b32", "uniform-k16")
        ),
        **step_size_figures(
            "real_rl_format_lr4_planner_lr", "planlr", ("uniform-auto", "uniform-auto-lr1")
        ),
        **planner_figures("planner_vs_grid_format_lr4", "plan"),
        **planner_figures("planner_vs_grid_format_lr4_lr1", "planlr", {"vs_auto": "uniform-auto"}),
        **{
            f"{prefix}.{axis}.vs_auto": PlannerFigure(stem, axis, "over:uniform-auto")
            for prefix, stem in (
                ("planlr10", "planner_vs_grid_format_lr4_lr1_10"),
                ("planlrfresh", "planner_vs_grid_format_lr4_lr1_fresh"),
            )
            for axis in ("h200", "cpu")
        },
        "planlr10.meter": PlannerFigure("planner_vs_grid_format_lr4_lr1_10", "h200", "meter"),
        "planlr10.h200.over_best": PlannerFigure(
            "planner_vs_grid_format_lr4_lr1_10", "h200", "over_best"
        ),
        "planlr10.cpu.over_best": PlannerFigure(
            "planner_vs_grid_format_lr4_lr1_10", "cpu", "over_best"
        ),
        "planlr10.h200.equal": PlannerFigure("planner_vs_grid_format_lr4_lr1_10", "h200", "equal"),
        "planlr10.cpu.equal": PlannerFigure("planner_vs_grid_format_lr4_lr1_10", "cpu", "equal"),
        **step_size_figures(
            "real_rl_format_lr4_planner_start", "start", ("uniform-auto-start-lr1",)
        ),
        **planner_figures(
            "planner_vs_grid_format_lr4_start",
            "start",
            {"vs_auto": "uniform-auto", "vs_lr1": "uniform-auto-lr1"},
        ),
        **step_size_figures("real_rl_format_lr4_planner_cpu", "plancpu", ("uniform-auto-cpu",)),
        **planner_figures(
            "planner_vs_grid_format_lr4_cpu", "plancpu", {"vs_start": "uniform-auto-start-lr1"}
        ),
        **step_size_figures(
            "real_rl_std_planner",
            "stdplan",
            ("uniform-b64", "uniform-k16", "uniform-auto-start-lr1", "uniform-auto-cpu"),
        ),
        **planner_figures("planner_vs_grid_std", "stdplan", {"vs_cpu": "uniform-auto-cpu"}),
        "stdplan.fit": PlannerFigure("planner_vs_grid_std", "h200", "fit:prompts, to plateau"),
        "stdplan.slope": PlannerFigure("planner_vs_grid_std", "h200", "slope:prompts, to plateau"),
        "stdplan.law_sgd": PlannerFigure(
            "planner_vs_grid_std", "h200", "law:prompts, to plateau|0|sgd"
        ),
        "stdplan.law_adam": PlannerFigure(
            "planner_vs_grid_std", "h200", "law:prompts, to plateau|0|adam_kept"
        ),
        **planner_figures(
            "planner_vs_grid_format_lr4_adam_preview", "adampre", {"vs_plain": "uniform-auto-cpu"}
        ),
        **planner_figures(
            "planner_vs_grid_std_cpu", "stdplancpu", {"vs_start": "uniform-auto-start-lr1"}
        ),
        **planner_figures(
            "planner_vs_grid_std_adam_preview", "stdadampre", {"vs_plain": "uniform-auto-cpu"}
        ),
        **lr_price_figures("lr_step_price_std", "lrprice"),
        **lr_price_figures("lr_step_price_std_fresh", "lrfresh"),
        "std.dapo-onecall.informative": Figure(
            "real_rl_std_step_size_e4",
            "dapo-onecall",
            ("device_same_rows", "informative_per_step"),
            interval(1),
        ),
        "std.dapo-onecall.same_h200": Figure(
            "real_rl_std_step_size_e4",
            "dapo-onecall",
            ("device_same_rows", "equal_h200_pass1"),
            interval(),
        ),
        "std.dapo-onecall.same_cpu": Figure(
            "real_rl_std_step_size_e4",
            "dapo-onecall",
            ("device_same_rows", "cpu_whole_run"),
            interval(2, False, "x"),
        ),
    }
)


def compute(results: Path, figures: Mapping[str, AnyFigure] | None = None) -> dict[str, str]:
    """Every figure's text, by name."""
    return {name: f.value(results) for name, f in (figures or FIGURES).items()}


def render(page: str, values: Mapping[str, str]) -> str:
    """The page with each marked figure's text replaced by its value; a ValueError naming a
    marker whose figure does not exist."""
    unknown = sorted({m["name"] for m in MARK.finditer(page)} - set(values))
    if unknown:
        raise ValueError(f"the page marks figures no report produces: {', '.join(unknown)}")
    return MARK.sub(lambda m: f"<!--fig:{m['name']}-->{values[m['name']]}<!--/fig-->", page)


def differences(page: str, values: Mapping[str, str]) -> list[str]:
    """'NAME: page says X, the reports Y' for each marked figure that differs."""
    return [
        f"{m['name']}: the page says {m['text']!r}, the reports {values[m['name']]!r}"
        for m in MARK.finditer(page)
        if m["name"] in values and m["text"] != values[m["name"]]
    ]


def unmarked(page: str) -> list[str]:
    """The figure-like texts (a value with an interval, a ratio) outside every marker, each
    with its line: a figure no command produces."""
    bare = MARK.sub("", page)
    out = []
    for line in bare.splitlines():
        if line.lstrip().startswith(("$", "frontier ", "python ", "    ")):
            continue  # commands and code
        out += [f"{m.group(0)!r} in: {line.strip()[:100]}" for m in FIGURE_LIKE.finditer(line)]
    return out
