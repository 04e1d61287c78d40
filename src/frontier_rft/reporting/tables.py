"""The TTB/BSF summary table: one row per label, mean ± std over seeds, best value in bold."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from frontier_rft.reporting.data import display_label, label_notes

__all__ = [
    "COLUMNS",
    "MARKDOWN_COLUMNS",
    "Cell",
    "Column",
    "format_summary_table",
    "learner_title",
    "real_rl_note",
    "summary_cells",
    "withheld_bold",
]


@dataclass(frozen=True)
class Column:
    """One summary statistic shown as a table column."""

    key: str
    """Key in results['summary'][label]."""
    short: str
    """Header in the Markdown table."""
    group: str
    """Header group in the HTML table."""
    sub: str
    """Header under the group in the HTML table."""
    decimals: int
    """Digits after the point (ties are judged at this precision)."""
    better: Literal["lower", "higher"] | None
    """Which direction wins the bold; None for descriptive columns."""
    reached: bool = False
    """Whether the statistic carries 'reached k of n seeds' (TTB)."""
    outcome: bool = False
    """A learning outcome (speed, score): no bold for a label real RL did not find ahead."""


_TTB = "Time to baseline (TTB), lower is better"
_BSF = "Best so far vs baseline (BSF), higher is better"
_STEP = "Per step, mean over the run"
_SCORE = "Held-out score"
COLUMNS: tuple[Column, ...] = (
    Column("ttb50", "TTB50 ↓", _TTB, "50%", 2, "lower", reached=True, outcome=True),
    Column("ttb75", "TTB75 ↓", _TTB, "75%", 2, "lower", reached=True, outcome=True),
    Column("ttb100", "TTB100 ↓", _TTB, "100%", 2, "lower", reached=True, outcome=True),
    Column("bsf25", "BSF25 ↑", _BSF, "25%", 3, "higher", outcome=True),
    Column("bsf50", "BSF50 ↑", _BSF, "50%", 3, "higher", outcome=True),
    Column("bsf100", "BSF100 ↑", _BSF, "100%", 3, "higher", outcome=True),
    # ETR is the mechanism, not an outcome: a skip raises it by design (DESIGN: judge by
    # held-out score), so no arrow and no bold.
    Column("etr", "ETR", _STEP, "ETR", 2, None),
    Column("mean_abs_adv", "mean |A| ↑", _STEP, "mean |A| ↑", 3, "higher"),
    Column("distinct_trained", "distinct", _STEP, "distinct tasks", 0, None),
    Column("overhead_ms", "ms/step ↓", _STEP, "overhead ms ↓", 2, "lower"),
    Column("final_score", "final ↑", _SCORE, "final ↑", 3, "higher", outcome=True),
    Column("best_score", "best ↑", _SCORE, "best ↑", 3, "higher", outcome=True),
)
MARKDOWN_COLUMNS = ("ttb50", "ttb75", "ttb100", "bsf25", "bsf50", "bsf100", "etr", "overhead_ms")


@dataclass(frozen=True)
class Cell:
    """One formatted table cell."""

    mean: str
    """Mean over seeds, or '-' when there is no value."""
    std: str
    """Std over seeds ('' when there is none, or a single seed reached a TTB target)."""
    reached: str
    """'k/n' seeds that reached the target (TTB columns), else ''."""
    best: bool
    """Whether this is the column's best value (shown in bold)."""

    @property
    def value(self) -> str:
        """'mean ± std', or just the mean when there is no std."""
        return f"{self.mean} ± {self.std}" if self.std else self.mean


def _number(x: Any) -> float | None:
    if x is None:
        return None
    value = float(x)
    return value if math.isfinite(value) else None


def _rank(stat: Mapping[str, Any], col: Column) -> tuple[float, ...] | None:
    """Sort key (smaller is better) at display precision; None when there is nothing to rank."""
    mean = _number(stat.get("mean"))
    if col.better is None or mean is None:
        return None
    shown = round(mean, col.decimals)
    if col.better == "higher":
        return (-shown,)
    # A TTB reached on more seeds beats a lower mean over fewer (cherry-picked) seeds.
    return (-float(stat.get("reached") or 0), shown) if col.reached else (shown,)


def _format(stat: Mapping[str, Any], col: Column) -> tuple[str, str, str]:
    mean, std = _number(stat.get("mean")), _number(stat.get("std"))
    reached = f"{stat.get('reached', 0)}/{stat.get('of', 0)}" if col.reached else ""
    if mean is None:
        return "-", "", reached
    single = col.reached and int(stat.get("reached") or 0) <= 1
    spread = f"{std:.{col.decimals}f}" if std is not None and not single else ""
    return f"{mean:.{col.decimals}f}", spread, reached


def _unconfirmed(results: Mapping[str, Any]) -> dict[str, str]:
    """Labels real RL measured within noise of, or below, the baseline: verdict by label."""
    verdicts = (results.get("real_rl") or {}).get("verdicts") or {}
    return {k: v for k, v in verdicts.items() if v in ("noise", "hurts")}


def summary_cells(
    results: Mapping[str, Any], columns: Sequence[Column] = COLUMNS
) -> dict[str, list[Cell]]:
    """The formatted cells of every label (in display order) for the given columns. An
    outcome column's best is not bold when real RL did not find that label ahead."""
    summary: Mapping[str, Any] = results["summary"]
    unconfirmed = _unconfirmed(results)
    out: dict[str, list[Cell]] = {label: [] for label in results["labels"]}
    for col in columns:
        stats = {label: summary.get(label, {}).get(col.key) or {} for label in out}
        ranks = {label: _rank(stat, col) for label, stat in stats.items()}
        present = [r for r in ranks.values() if r is not None]
        best = min(present) if present else None
        for label, stat in stats.items():
            mean, std, reached = _format(stat, col)
            bold = best is not None and ranks[label] == best
            bold = bold and not (col.outcome and label in unconfirmed)
            out[label].append(Cell(mean, std, reached, bold))
    return out


def withheld_bold(
    results: Mapping[str, Any], columns: Sequence[Column] = COLUMNS
) -> dict[str, str]:
    """Labels whose best value in an outcome column is shown without bold, with the real-RL
    verdict that withheld it ('noise' or 'hurts')."""
    unconfirmed = _unconfirmed(results)
    out: dict[str, str] = {}
    for col in columns:
        if not col.outcome:
            continue
        stats = {
            label: results["summary"].get(label, {}).get(col.key) or {}
            for label in results["labels"]
        }
        ranks = {label: _rank(stat, col) for label, stat in stats.items()}
        present = [r for r in ranks.values() if r is not None]
        if not present:
            continue
        for label, rank in ranks.items():
            if rank == min(present) and label in unconfirmed:
                out[label] = unconfirmed[label]
    return out


_VERDICT_WORDS = {"noise": "within noise of uniform", "hurts": "below uniform"}


def learner_title(results: Mapping[str, Any]) -> str:
    """One line naming the simulated learner, its regime and that it is not real RL."""
    scenario = results["scenario"]
    settings = results["settings"]
    config = scenario.get("config") or {}
    name, desc = scenario.get("name", "?"), scenario.get("description") or ""
    regime = ""
    tasks = config.get("num_tasks")
    if tasks and settings.get("steps") and settings.get("batch"):
        epochs = settings["steps"] * settings["batch"] / tasks
        regime = f" ({tasks:,} prompts, {epochs:.1f} epochs of {settings['steps']} steps)"
    head = f"Simulated learner {name!r}{regime}"
    if (results.get("real_rl") or {}).get("modified"):
        head += " with fields overridden (so not the regime its description names)"
    head += f": {desc}." if desc else "."
    return head + " A simulation, not a real-RL result."


def real_rl_note(results: Mapping[str, Any]) -> str:
    """Where the real-RL results are, and which bolds they withheld ('' without real_rl)."""
    real = results.get("real_rl")
    if not real:
        return ""
    where = f"the real pool of {real['pool']} prompts" if real.get("pool") else "both real pools"
    text = f"Real-RL results (standard testbed, held-out pass@1 vs uniform): {real['doc']}."
    withheld = withheld_bold(results)
    verdicts = real.get("verdicts") or {}
    baseline = results["settings"].get("baseline")
    unmeasured = sorted(
        label
        for label, cells in summary_cells(results).items()
        if label not in verdicts
        and label != baseline
        and any(c.best for c, col in zip(cells, COLUMNS, strict=True) if col.outcome)
    )
    if unmeasured:
        text += (  # skip ran on real RL, but its runs predate its definition of today
            " Bold with no real-RL verdict for the selector as defined today (simulated "
            f"only): {', '.join(unmeasured)}."
        )
    if withheld:
        parts = ", ".join(f"{k} ({_VERDICT_WORDS[v]})" for k, v in sorted(withheld.items()))
        text += (
            f" Not bold although best in a column: {parts}, as measured on {where}; "
            "a simulated win real RL did not confirm."
        )
    return text


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def format_summary_table(
    results: Mapping[str, Any], columns: Sequence[str] = MARKDOWN_COLUMNS, legend: bool = True
) -> str:
    """Markdown table of the summary (mean ± std over seeds, k/n reached, best in bold).

    With `legend`, a paragraph after the table says what TTB, BSF and ETR mean.
    """
    by_key = {c.key: c for c in COLUMNS}
    unknown = [k for k in columns if k not in by_key]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; choose from {list(by_key)}")
    cols = [by_key[k] for k in columns]
    notes = label_notes(results)
    header = ["method", *(c.short for c in cols)]
    rows = []
    for label, cells in summary_cells(results, cols).items():
        row = [_md_escape(display_label(label, results, notes))]
        for cell in cells:
            text = f"**{cell.value}**" if cell.best else cell.value
            row.append(f"{text} ({cell.reached})" if cell.reached else text)
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(["-" * (widths[0] + 2)] + ["-" * (w + 1) + ":" for w in widths[1:]]) + "|"
    baseline = results["settings"].get("baseline")
    note = (
        f"TTB = steps to reach 50/75/100% of {baseline}'s improvement, relative to {baseline} "
        "(k/n: seeds that reached it, '-': never); BSF = best score so far at 25/50/100% of "
        f"the budget relative to {baseline}; ETR = effective task ratio, the share of selected "
        "prompts with mixed outcomes: what a skip raises by design (a kept run most), neither "
        "better nor worse (judge by held-out score). Mean ± std over seeds; best per column "
        "in bold."
    )
    table = [line(header), rule, *(line(r) for r in rows)]
    real = real_rl_note(results)
    if real:
        note += " " + real
    return "\n".join([*table, "", note] if legend else table)
