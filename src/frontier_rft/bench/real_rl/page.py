"""The real-RL benchmark's results page (<name>.md), from summarize_runs' summary.

Entries that spend different rollouts a step are read by cumulative rollouts first; every
number says what it is paired on (steps or rollouts), which seeds it rests on where they
disagree, and what the records could not count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.device_report import AXES, TARGETS, device_table
from frontier_rft.bench.real_rl.device_seconds import PROJECTED_DEVICES
from frontier_rft.bench.real_rl.skip_cost import skip_cost_lines
from frontier_rft.bench.real_rl.testbed import Testbed, learner_line
from frontier_rft.step_cost import load_curve

__all__ = [
    "SCHEDULE_TARGET",
    "ResultFiles",
    "markdown_report",
    "meets_schedule_target",
    "page_header",
    "pass_at_k_key",
    "seeds_above",
]

SAME_SPEND = 0.005
"""Rollouts a step within this share of uniform's count as the same spend."""


@dataclass(frozen=True)
class ResultFiles:
    """Where a benchmark's results are written, and what they say made them."""

    out: Path
    """The results directory."""
    name: str
    """The file stem: <name>.json, <name>_full.json, <name>.md, <name>_*.png."""
    command: str
    """The command that ran the benchmark, as written into the results."""
    machine: str
    """The machine the runs trained on, as written into the results."""
    ledger: str = ""
    """The run ledger folder the runs were read from ('' = their run directories)."""
    definitions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per entry, the ledger definition its records have and whether it is today's."""
    codes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per entry, the code commits its runs trained with (short hashes, from the ledger)."""


SCHEDULE_TARGET = {"rollouts": 0.6, "pass1_ci_lower": -0.005, "pass8_mean": -0.01}
"""A saving on the user's schedule (the fewer-rollouts issue's target): total rollouts at most
0.6x uniform's, held-out pass@1 minus uniform's with CI lower bound >= -0.005, and mean
pass@8 no more than 0.01 below uniform's."""


def pass_at_k_key(rows: Mapping[str, Any]) -> str:
    """The held-out pass@k the page reports beside pass@1: the largest k > 1 the runs were
    scored at (pass@8 on the Countdown testbeds, pass@4 on SmolLM2's); pass@8 when none."""
    ks = [
        int(m.group(1))
        for r in rows.values()
        for key in r["final"]
        if (m := re.fullmatch(r"eval/pass@(\d+)", key)) and int(m.group(1)) > 1
    ]
    return f"eval/pass@{max(ks)}" if ks else "eval/pass@8"


def meets_schedule_target(
    row: Mapping[str, Any], baseline_steps: float, pass_k: str = "eval/pass@8"
) -> bool:
    """Whether a summarised entry meets SCHEDULE_TARGET at uniform's schedule (its steps
    `baseline_steps`; the pass@8 condition on `pass_k`); False where a number is missing."""
    if row["steps_run"]["mean"] != baseline_steps:  # a saving keeps uniform's schedule
        return False
    spent = row["rollouts_vs_uniform"]["mean"]
    pass1 = row["final_minus_uniform"]["eval/pass@1"]
    pass8 = row["final_minus_uniform"].get(pass_k, {"mean": None})
    if spent is None or pass1["ci"] is None or pass8["mean"] is None:
        return False
    return bool(
        spent <= SCHEDULE_TARGET["rollouts"]
        and pass1["ci"][0] >= SCHEDULE_TARGET["pass1_ci_lower"]
        and pass8["mean"] >= SCHEDULE_TARGET["pass8_mean"]
    )


def seeds_above(cell: Mapping[str, Any]) -> str:
    """'k/n': on how many of the n paired seeds a difference is above zero."""
    vals = cell["values"]
    return f"{sum(1 for v in vals if v is not None and v > 0)}/{len(vals)}"


def _fmt_ratio(cell: Mapping[str, Any], digits: int = 2) -> str:
    """A time to a score over seeds: its mean [CI] where every seed reached it; else the
    survival-style median† [CI] with k/n reached (never a mean of those that reached)."""
    n = len(cell["values"])
    if cell["mean"] is not None:
        lo, hi = cell["ci"]
        return f"{cell['mean']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
    if "median" not in cell:  # not a time (a BSF): every seed has one, or none is shown
        return f"- ({cell['reached']}/{n})"
    if cell["median"] is None:
        return f"not reached by half ({cell['reached']}/{n} reached)"
    ends = ", ".join(
        "beyond" if v is None else f"{v:.{digits}f}" for v in cell["median_ci"] or (None, None)
    )
    return f"{cell['median']:.{digits}f}† [{ends}] ({cell['reached']}/{n} reached)"


def _fmt_mean(cell: Mapping[str, Any] | None, digits: int = 3) -> str:
    """A mean and its CI; '-' where none (or the row predates the measure)."""
    if cell is None or cell["mean"] is None:
        return "-"
    lo, hi = cell["ci"]
    return f"{cell['mean']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _fmt_diff(cell: Mapping[str, Any]) -> str:
    """A paired difference; where its seeds disagree in sign, on how many it is above."""
    text = _fmt_mean(cell)
    above, n = (int(v) for v in seeds_above(cell).split("/"))
    return f"{text} ({above}/{n} above)" if cell["mean"] is not None and 0 < above < n else text


def _fmt_last(row: Mapping[str, Any]) -> str:
    """pass@1 − uniform over the last quarter of evaluations; '-' where the row predates it."""
    cell = row.get("last_quarter_pass1_minus_uniform")
    return "-" if cell is None else _fmt_diff(cell)


def _fmt_timed(row: Mapping[str, Any], text: str) -> str:
    """A wall-clock share (`text`, over the seeds timed in one run with uniform's): as is
    where every seed was, with how many where some were, 'other runs' where none was."""
    together = row.get("timed_together")
    n = len(row["seeds"])
    if together is None or len(together) == n:  # a row that predates the rule: every seed
        return text
    if not together:
        return "other runs"
    return f"{text} ({len(together)}/{n} seeds timed in one run)"


def _fmt_tokens(row: Mapping[str, Any]) -> str:
    """Generated tokens as a share of uniform's, marked where a record's tokens are derived."""
    text = _fmt_mean(row.get("generated_tokens_vs_uniform"), 2)
    derived = row.get("generated_tokens_derived") or []
    if not derived or text == "-":
        return text
    n = len(row["seeds"])
    return f"{text} (derived{'' if len(derived) == n else f', {len(derived)}/{n} seeds'})"


def _timed_apart(rows: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    """The labels with a seed not timed in one run with uniform's."""
    return [
        lb
        for lb in labels
        if rows[lb].get("timed_together") is not None
        and len(rows[lb]["timed_together"]) < len(rows[lb]["seeds"])
    ]


def _fmt_distinct(row: Mapping[str, Any]) -> str:
    """Distinct prompts trained, or why the records cannot tell."""
    if row["distinct_trained"]["mean"] is None:
        return "not recorded"
    return _fmt_mean(row["distinct_trained"], 0)


def _ttb_table(rows: Mapping[str, Any], labels: Sequence[str], suffix: str) -> list[str]:
    lines = [
        "| selector | TTB50 ↓ | TTB75 ↓ | TTB100 ↓ | BSF25 ↑ | BSF50 ↑ | BSF100 ↑ |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label in labels:
        r = rows[label]
        cells = [_fmt_ratio(r[f"{k}{suffix}"]) for k in ("ttb50", "ttb75", "ttb100")]
        cells += [_fmt_ratio(r[f"{k}{suffix}"], 3) for k in ("bsf25", "bsf50", "bsf100")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _spend_differs(rows: Mapping[str, Any], labels: Sequence[str], baseline: str) -> list[str]:
    """The labels whose rollouts a step differ from the baseline's."""
    base = rows[baseline]["rollouts_per_step"]["mean"]
    spends = {label: rows[label]["rollouts_per_step"]["mean"] for label in labels}
    return [
        label
        for label, spend in spends.items()
        if base and spend is not None and abs(spend / base - 1.0) > SAME_SPEND
    ]


def _ttb_section(rows: Mapping[str, Any], labels: Sequence[str], baseline: str) -> list[str]:
    """TTB/BSF by rollouts first where entries spend differently a step, then by steps."""
    differ = _spend_differs(rows, labels, baseline)
    steps = rows[baseline]["steps_run"]["mean"]
    longer = [lb for lb in labels if (rows[lb]["steps_run"]["mean"] or 0) > (steps or 0)]
    lines: list[str] = []
    if differ:
        base = rows[baseline]["rollouts_per_step"]["mean"]
        spend = ", ".join(
            f"{lb} {rows[lb]['rollouts_per_step']['mean'] / base:.2f}x" for lb in differ
        )
        lines += [
            f"Rollouts a step, as a share of uniform's: {spend}. A step is not the same cost "
            "here, so the entries are read by cumulative rollouts first.",
            "",
            "### By cumulative rollouts",
            "",
            *_ttb_table(rows, labels, "_rollouts"),
            "",
            "TTB: rollouts to reach uniform's score target over uniform's rollouts to it. "
            "BSF(beta): best held-out pass@1 within beta x uniform's total rollouts over "
            "uniform's best within them (the best evaluation at or before that budget: "
            "entries evaluate at different rollout counts, none is interpolated).",
            "",
            "### By training steps",
            "",
        ]
    lines += _ttb_table(rows, labels, "")
    lines += [
        "",
        "Read at evaluation points (the first evaluation at or above the target; never "
        "interpolated between evaluations). Mean over paired seeds [bootstrap 95% CI] where "
        "every seed reached the target; otherwise `m† [CI] (k/n reached)`: the survival-style "
        "(Kaplan-Meier) median over seeds, a seed that never reached counted as censored at "
        "its budget, with a bootstrap CI ('beyond': past every seed's budget).",
    ]
    if longer:
        lines.append(
            f"BSF by steps scores every entry at a share of uniform's {steps:.0f} steps: "
            f"{', '.join(longer)} run longer, so their BSF100 here is scored at step "
            f"{steps:.0f}, not at their end"
            + (" (by rollouts, uniform's total is where they end)." if differ else ".")
        )
    return lines


def _some_dropped(rows: Mapping[str, Any], labels: Sequence[str]) -> bool:
    """Whether any entry dropped mixed groups untrained (or the two counts differ)."""
    return any(
        rows[lb]["mixed_dropped_share"]["mean"] is not None
        or rows[lb]["distinct_trained"]["mean"] != rows[lb]["distinct_mixed"]["mean"]
        for lb in labels
    )


def _distinct_note(rows: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    """What the distinct-prompt columns count, and for which entries the records cannot say."""
    trained = (
        "Distinct prompts trained: prompts whose group had mixed rewards and reached the loss "
        "at least once"
    )
    if not _some_dropped(rows, labels):
        return [f"{trained} (here every mixed group rolled out was trained)."]
    unknown = [lb for lb in labels if "not recorded" in rows[lb]["distinct_trained_source"]]
    lines = [
        f"{trained}. Mixed when rolled out: prompts whose group had mixed rewards at least "
        "once, trained or not (the selector's `tasks/distinct_trained`). They differ where "
        "mixed groups are dropped untrained (dynamic sampling's surplus)."
    ]
    for label in unknown:
        share = rows[label].get("mixed_dropped_share", {"mean": None})
        dropped = (
            f" dropped {100 * share['mean']:.0f}% of the mixed groups it rolled out untrained,"
            if share["mean"] is not None
            else " dropped mixed groups untrained,"
        )
        lines.append(
            f"{label}:{dropped} and its records predate the trainer's count of prompts that "
            "reached the loss (`train/distinct_prompts_trained`): not recorded; its mixed "
            "count is an upper bound."
        )
    return lines


def markdown_report(
    summary: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    header: str,
) -> str:
    """The results page: TTB/BSF tables, costs, training signal, end scores, effects."""
    rows, baseline = summary["labels"], summary["baseline"]
    differ = bool(_spend_differs(rows, labels, baseline))
    pass_k = pass_at_k_key(rows)
    k_name = pass_k.removeprefix("eval/")
    lines = [header, "", *_ttb_section(rows, labels, baseline)]
    lines += [
        "",
        "### Cost to reach uniform's best held-out pass@1 (per seed: uniform's own best)",
        "",
        "| selector | steps | rollouts | wall-clock s | TTB100 by rollouts | TTB100 by "
        "wall-clock | s/step | CPU s/step | select ms/step |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label in labels:
        r = rows[label]
        lines.append(
            f"| {label} | {_fmt_ratio(r['steps_to_uniform_best'], 0)} | "
            f"{_fmt_ratio(r['rollouts_to_uniform_best'], 0)} | "
            f"{_fmt_ratio(r['seconds_to_uniform_best'], 0)} | "
            f"{_fmt_ratio(r['ttb100_rollouts'])} | "
            f"{_fmt_timed(r, _fmt_ratio(r['ttb100_seconds']))} | "
            f"{_fmt_mean(r['step_s'], 2)} | {_fmt_mean(r['step_cpu_s'], 2)} | "
            f"{_fmt_mean(r['select_ms'], 1)} |"
        )
    lines += ["", *_device_section(rows, labels, baseline)]
    dropped = _some_dropped(rows, labels)
    mixed_col = " distinct prompts mixed when rolled out |" if dropped else ""
    equal_col = " pass@1 − uniform at equal rollouts |" if differ else ""
    lines += [
        "",
        "### Training signal and end scores",
        "",
        "| selector | ETR | mean \\|A\\| | selected success rate | distinct prompts trained |"
        + mixed_col
        + f" final pass@1 | final {k_name} | final pass@1 − uniform (each at its end) |"
        + equal_col,
        "|---|---:|---:|---:|---:|---:|---:|---:|"
        + ("---:|" if dropped else "")
        + ("---:|" if differ else ""),
    ]
    for label in labels:
        r = rows[label]
        fin, diff = r["final"], r["final_minus_uniform"]
        mixed = f" {_fmt_mean(r['distinct_mixed'], 0)} |" if dropped else ""
        equal = f" {_fmt_diff(r['pass1_minus_uniform_equal_rollouts'])} |" if differ else ""
        lines.append(
            f"| {label} | {_fmt_mean(r['etr'], 2)} | {_fmt_mean(r['mean_abs_advantage'], 3)} | "
            f"{_fmt_mean(r['selected_success_rate'], 2)} | {_fmt_distinct(r)} |"
            + mixed
            + f" {_fmt_mean(fin['eval/pass@1'])} | "
            f"{_fmt_mean(fin.get(pass_k, {'mean': None}))} | "
            f"{_fmt_diff(diff['eval/pass@1'])} |" + equal
        )
    lines += ["", *_distinct_note(rows, labels)]
    lines.append(
        "`(k/n above)`: the paired difference is above zero on k of the n seeds (shown where "
        "the seeds disagree in sign)."
        + (
            " Each run's end is not the same spend here (steps and rollouts: the schedule "
            "table below); at equal rollouts each pair is scored at the smaller of its two "
            "totals (each run's latest evaluation at or before it)."
            if differ
            else ""
        )
    )
    lines += [
        "",
        "### At each run's own schedule: what it spent, where it ended",
        "",
        "Each run's total rollouts, generated completion tokens, training CPU time and "
        "wall-clock (the sum of its steps, evaluations excluded) as a share of uniform's on the "
        "same seed, and its final held-out scores minus uniform's (paired). Wall-clock compares "
        "only runs made in one bench-rl run on one machine (its --jobs queue starts a seed's "
        "entries one after the other, so they overlap); CPU time is one thread's, and "
        "steadier. A saving on the user's "
        "schedule needs the same steps with fewer rollouts and scores that are not lower; the "
        f"target column checks rollouts <= {SCHEDULE_TARGET['rollouts']}x, pass@1 CI lower >= "
        f"{SCHEDULE_TARGET['pass1_ci_lower']} and mean {k_name} >= "
        f"{SCHEDULE_TARGET['pass8_mean']}. A final evaluation is one evaluation: beside it, "
        "pass@1 − uniform averaged over each run's last quarter of evaluations (the final "
        "included), which one evaluation moves less.",
        "",
        "| selector | steps | rollouts / uniform's | generated tokens / uniform's | "
        "CPU / uniform's | wall-clock / uniform's | pass@1 − uniform | "
        "pass@1 − uniform, last quarter | "
        f"{k_name} − uniform | distinct prompts trained | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    steps = rows[baseline]["steps_run"]["mean"]
    for label in labels:
        r = rows[label]
        diff = r["final_minus_uniform"]
        pass8 = diff.get(pass_k, {"values": [], "mean": None, "ci": None})
        met = meets_schedule_target(r, steps, pass_k)
        lines.append(
            f"| {label} | {_fmt_mean(r['steps_run'], 0)} | {_fmt_mean(r['rollouts_vs_uniform'], 2)}"
            f" | {_fmt_tokens(r)}"
            f" | {_fmt_mean(r['cpu_vs_uniform'], 2)}"
            f" | {_fmt_timed(r, _fmt_mean(r.get('wall_vs_uniform'), 2))}"
            f" | {_fmt_diff(diff['eval/pass@1'])} | {_fmt_last(r)} | "
            f"{_fmt_diff(pass8)} | {_fmt_distinct(r)} | "
            f"{'—' if label == baseline else 'yes' if met else 'no'} |"
        )
    lines += _schedule_notes(rows, labels)
    costs = {label: rows[label]["skip_cost"] for label in labels if "skip_cost" in rows[label]}
    if costs:
        lines += [
            "",
            "### What passing over groups cost, per epoch (against the paired uniform run)",
            "",
            *skip_cost_lines(costs),
        ]
    lines += ["", "### The papers' reported effects, on this learner", ""]
    for c in checks:
        verdict = "reproduced" if c["reproduced"] else "not reproduced"
        lines.append(
            f"- **{c['effect']}** ({c['paper']}): **{verdict}** "
            f"(seeds {c['seeds']}). Measured: `{_compact(c['measured'])}`"
        )
    return "\n".join(lines) + "\n"


def _device_section(rows: Mapping[str, Any], labels: Sequence[str], baseline: str) -> list[str]:
    """Each currency: each entry's median cost to uniform's plateau on every axis over
    uniform's, its scores at equal projected H200 seconds and passes; then against the same
    rows."""
    others = [lab for lab in labels if lab != baseline and "device" in rows[lab]]
    if not others:
        return []
    curves = "; ".join(f"`{n}`: {load_curve(n).summary()}" for n in PROJECTED_DEVICES)
    read = rows[others[0]]["device"]["read"]
    how = ", ".join(
        f"{AXES[a]} at {'the grid' if read[a] == ['grid'] else 'evaluations'}" for a in AXES
    )
    lines = [
        "### Each currency: cost to uniform's plateau",
        "",
        f"Target: {TARGETS['plateau']}. Each entry's survival-style median cost to reach it over "
        "uniform's, along each axis (steps, passes over the prompts, rollouts, and seconds "
        "projected on a measured step-cost curve: every logged step costed by its rows a call "
        "to generate, its completion cap and its rows trained; evaluation left out; a "
        "projection, not a measurement of these runs), with a bootstrap CI over seeds and "
        f"k/n reached where some seed never did. Curves: {curves}. Read: {how} (an axis read "
        "at evaluations positions each arm at its own evaluation steps). Scores at equal cost "
        "are read at the last point both arms reached (the last quarter: the mean over the "
        "points in the last quarter of that span), never interpolated. CPU time, whole run: "
        "measured, only for pairs timed side by side in one bench run.",
        "",
        *device_table({lab: rows[lab]["device"] for lab in others}, baseline),
    ]
    same = {lab: rows[lab]["device_same_rows"] for lab in others if "device_same_rows" in rows[lab]}
    for other in sorted({c["baseline"] for c in same.values()}):
        picked = {lab: c for lab, c in same.items() if c["baseline"] == other}
        lines += [
            "",
            f"Against uniform at the same rows a step (`{other}`): selection counts only here.",
            "",
            *device_table(picked, other),
        ]
    return lines


def _schedule_notes(rows: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    """Below the schedule table: which wall-clock shares are left out, which tokens derived."""
    lines: list[str] = []
    apart = _timed_apart(rows, labels)
    if apart:
        lines.append(
            f"Wall-clock (here and TTB100 by wall-clock above) of {', '.join(apart)}: its "
            "runs and uniform's were timed in different runs (the records name different "
            "code or machines), so only the seeds whose two records name one machine and one "
            "clean code commit are paired, 'other runs' where none are (a record holds no run "
            "id: one commit stands in for one bench-rl run). CPU time is a ratio only where "
            "timed side by side too: '-' otherwise."
        )
    derived = [lb for lb in labels if rows[lb].get("generated_tokens_derived")]
    if derived:
        lines.append(
            "(derived): the records (the entry's or uniform's) predate the trainer's count "
            "of generated tokens (`train/generated_tokens`); their tokens are each step's "
            "mean completion length x its rollouts (`train/completion_tokens` x "
            "`train/rollouts`), exact up to the ledger's rounding where every completion "
            "rolled out is a rollout."
        )
    return ["", *lines] if lines else []


def _compact(obj: Any) -> str:
    """A short JSON rendering with rounded floats for the effects list."""

    def rnd(x: Any) -> Any:
        if isinstance(x, float):
            return round(x, 3)
        if isinstance(x, dict):
            return {
                k: rnd(v) for k, v in x.items() if k not in ("values", "mean_reached", "budgets")
            }
        if isinstance(x, list):
            return [rnd(v) for v in x]
        return x

    return json.dumps(rnd(obj), separators=(",", ":"))


def page_header(summary: Mapping[str, Any], files: ResultFiles, tb: Testbed, seeds: int) -> str:
    """The page's top: command, runs, code, machine, learner, uniform's gain."""
    t = tb.train
    gain, zero = summary["uniform_gain"], summary["start_zero_variance_share"]
    device = Path(files.ledger).name
    source = (
        [
            f"Runs: the run ledger's `{files.ledger}` ({device} runs, paired within that device "
            "class; `--report-only` rebuilds this page from it)  "
        ]
        if files.ledger
        else []
    )
    if files.codes:
        by_commits: dict[tuple[str, ...], list[str]] = {}
        for label, commits in files.codes.items():
            by_commits.setdefault(tuple(commits), []).append(label)
        parts = [
            f"{', '.join(labels)} at `{'`, `'.join(commits)}`"
            for commits, labels in by_commits.items()
        ]
        mixed = " (entries ran on different code)" if len(by_commits) > 1 else ""
        source.append(f"Code: {'; '.join(parts)}{mixed}.  ")
    earlier = sorted(k for k, v in files.definitions.items() if not v["today"])
    if earlier:
        source.append(
            "Earlier definitions: the runs of "
            + ", ".join(f"`{k}` ({files.definitions[k]['digest']})" for k in earlier)
            + " were made before the selector's config changed; today's is not measured yet.  "
        )
    return "\n".join(
        [
            f"# Real-RL selector benchmark ({seeds} paired seeds)",
            "",
            f"Command: `{files.command}`  ",
            *source,
            f"Machine: {files.machine}  ",
            f"Evaluated: every arm {summary['schedule']}, alike (one schedule a report).  ",
            learner_line(tb, summary["schedule"]),
            "Given: prompts + the policy's self-embeddings (what every trainer user has), paper "
            "defaults, unless the row says otherwise.  ",
            f"Uniform's held-out gain (final − start): {gain['mean']:+.3f} "
            f"[{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}]; start zero-variance share of the pool "
            f"under {t.group_size} rollouts: {zero['mean']:.3f} "
            f"[{zero['ci'][0]:.3f}, {zero['ci'][1]:.3f}].",
            "",
            "## TTB and BSF (BOTS paper's definitions, paired against uniform)",
        ]
    )
