"""The self-contained HTML page: settings, summary table, inline figures, notes, definitions."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from frontier_rft.reporting.data import label_notes, runs_by_label
from frontier_rft.reporting.plots import Plot, Style
from frontier_rft.reporting.tables import COLUMNS, learner_title, real_rl_note, summary_cells

__all__ = ["DEFINITIONS", "render_html"]

_CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #f6f6f4; color: #1d1d1f;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1280px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.3em; margin: 1.8em 0 0.5em; padding-bottom: 0.2em;
  border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.4em; }
.lede { font-size: 1.1em; color: #444; margin-top: 0; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.92em; }
pre { background: #f3f3f0; border: 1px solid #e2e2dc; padding: 8px 12px; overflow-x: auto;
  white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; }
table.kv td, table.kv th { padding: 2px 14px 2px 0; text-align: left; vertical-align: top; }
table.kv th { font-weight: 600; color: #444; }
.scroll { overflow-x: auto; }
table.summary { font-variant-numeric: tabular-nums; font-size: 0.9em; }
table.summary th, table.summary td { padding: 4px 7px; border-bottom: 1px solid #e6e6e6; }
table.summary thead th { background: #f3f3f0; text-align: center; font-weight: 600; }
table.summary thead tr:first-child th { border-bottom: 1px solid #cfcfcf; }
table.summary td { text-align: right; white-space: nowrap; }
table.summary td.method { text-align: left; white-space: normal; }
.name { white-space: nowrap; }
.sd { display: block; color: #777; font-size: 0.8em; }
table.summary tbody tr:nth-child(even) { background: #fafaf8; }
table.summary strong { color: #000; }
.swatch { display: inline-block; width: 18px; height: 0; margin-right: 7px;
  vertical-align: middle; border-top: 3px solid; }
.swatch.baseline { border-top-style: dashed; }
.swatch.dashdot { border-top-style: dotted; }
.tag { font-size: 0.8em; color: #555; background: #eee; border-radius: 3px; padding: 0 4px;
  margin-left: 4px; white-space: nowrap; }
.note { font-size: 0.8em; color: #8a3b00; background: #fff1e0; border-radius: 3px;
  padding: 0 4px; white-space: nowrap; }
td.method .note { display: table; margin: 2px 0 0 25px; }
figure { margin: 1.2em 0 2em; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { color: #333; margin-top: 0.4em; max-width: 80em; }
dl.defs dt { font-weight: 600; margin-top: 0.7em; }
dl.defs dd { margin-left: 1.5em; }
footer { margin-top: 3em; color: #777; font-size: 0.85em; }
"""

DEFINITIONS: tuple[tuple[str, str], ...] = (
    (
        "TTB(τ) — time to baseline",
        "Let P_init be the baseline's held-out score before training and P_best its best score "
        "over the budget. TTB(τ) is the number of steps a method needs to reach "
        "P_init + τ·(P_best − P_init), divided by the steps the baseline needs. Below 1 means "
        "faster than the baseline. '-' means never reached within the budget; k/n says on how "
        "many seeds it was reached, and the mean ± std is over those seeds only. Bold goes to "
        "the method reaching the target on the most seeds, then the lowest mean.",
    ),
    (
        "BSF(β) — best so far",
        "The best held-out score reached by β% of the step budget, divided by the baseline's "
        "best score by the same point. Above 1 means ahead of the baseline.",
    ),
    (
        "ETR — effective task ratio",
        "The share of selected prompts whose rollout group had mixed outcomes (neither all "
        "successes nor all failures). Only those prompts give group-relative methods (GRPO, "
        "RLOO) a non-zero gradient.",
    ),
    (
        "mean |A|",
        "Mean absolute group-relative advantage over the selected rollouts: how much gradient "
        "signal a batch carried.",
    ),
    (
        "distinct tasks",
        "How many different tasks gave the policy a gradient (were selected with a mixed-outcome "
        "group) at least once by the end of the run. Descriptive, not ranked: broad coverage is "
        "neither good nor bad in itself.",
    ),
    (
        "overhead ms",
        "Wall-clock milliseconds the selector spent per step (select plus folding in the "
        "feedback), excluding rollouts and training.",
    ),
    (
        "final / best score",
        "The held-out score after the last step, and the best held-out score over the run.",
    ),
    (
        "Mean ± std",
        "Over seeds (population standard deviation). Each method's seed s is compared with the "
        "baseline's seed s: the same learner and the same task pool.",
    ),
)

_SETTING_NAMES = {
    "steps": "training steps",
    "batch": "prompts per step",
    "rollouts": "rollouts per prompt",
    "seeds": "seeds",
    "baseline": "baseline",
}


def _value(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=False, ensure_ascii=False)


def _kv_table(items: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(
        f"<tr><th>{escape(str(k))}</th><td><code>{escape(_value(v))}</code></td></tr>"
        for k, v in items
    )
    return f'<table class="kv">{rows}</table>'


def _method_cell(label: str, style: Style, note: str | None) -> str:
    swatch = "swatch baseline" if style.baseline else "swatch"
    if style.linestyle == "-.":
        swatch += " dashdot"
    html = f'<span class="name"><span class="{swatch}" style="border-color:{style.color}"></span>'
    html += f"<code>{escape(label)}</code>"
    if style.baseline:
        html += '<span class="tag">baseline</span>'
    html += "</span>"
    if note:
        html += f'<span class="note">{escape(note)}</span>'
    return html


def _summary_table(results: Mapping[str, Any], styles: Mapping[str, Style]) -> str:
    notes = label_notes(results)
    groups: list[tuple[str, int]] = []
    for col in COLUMNS:
        if groups and groups[-1][0] == col.group:
            groups[-1] = (col.group, groups[-1][1] + 1)
        else:
            groups.append((col.group, 1))
    top = "".join(f'<th colspan="{n}" scope="colgroup">{escape(g)}</th>' for g, n in groups)
    sub = "".join(f'<th scope="col">{escape(c.sub)}</th>' for c in COLUMNS)
    head = f'<tr><th rowspan="2" scope="col">method</th>{top}</tr><tr>{sub}</tr>'
    body = []
    for label, cells in summary_cells(results, COLUMNS).items():
        tds = [f'<td class="method">{_method_cell(label, styles[label], notes.get(label))}</td>']
        for cell in cells:
            text = f"<strong>{escape(cell.mean)}</strong>" if cell.best else escape(cell.mean)
            spread = [f"± {cell.std}"] if cell.std else []
            spread += [f"{cell.reached} seeds"] if cell.reached else []
            if spread:
                text += f'<span class="sd">{escape(" · ".join(spread))}</span>'
            tds.append(f"<td>{text}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll"><table class="summary"><thead>{head}</thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _figure(plot: Plot) -> str:
    data = base64.b64encode(plot.png).decode("ascii")
    return (
        f'<figure id="{plot.name}"><h3>{escape(plot.title)}</h3>'
        f'<img src="data:image/png;base64,{data}" width="{plot.width}" height="{plot.height}" '
        f'alt="{escape(plot.title)}"><figcaption>{escape(plot.caption)}</figcaption></figure>'
    )


def _method_notes(results: Mapping[str, Any], styles: Mapping[str, Style]) -> str:
    notes = label_notes(results)
    flagged, configured = [], []
    for label, runs in runs_by_label(results).items():
        cell = _method_cell(label, styles[label], None)
        if label in notes:
            why = (
                " Its judge is a word-overlap stand-in, not an LLM: for prompts unlike its "
                "exemplars it answers one fixed value, so the selection stays close to uniform "
                "and this row does not measure METIS with a real judge."
                if "heuristic judge" in notes[label]
                else ""
            )
            flagged.append(
                f'<li>{cell}: <span class="note">{escape(notes[label])}</span>. This run departs '
                f"from the paper's setup in that respect; compare its numbers with care.{why}</li>"
            )
        selector = str(runs[0].get("selector", label))
        overrides = runs[0].get("overrides") or {}
        if selector != label or overrides:
            what = f"selector <code>{escape(selector)}</code>"
            if overrides:
                what += f" with <code>{escape(json.dumps(overrides, ensure_ascii=False))}</code>"
            configured.append(f"<li>{cell}: {what}.</li>")
    seeds = sorted({len(runs) for runs in runs_by_label(results).values()})
    parts = [f"<ul>{''.join(flagged)}</ul>"] if flagged else ["<p>No method carries a note.</p>"]
    if configured:
        parts.append(f"<p>Configurations:</p><ul>{''.join(configured)}</ul>")
    rest = "Every other method runs" if configured else "Every method runs"
    parts.append(
        f"<p>{rest} its selector under its own name with the paper's default hyperparameters; "
        f"seeds per method: {', '.join(map(str, seeds))}.</p>"
    )
    return "".join(parts)


def _method_metrics(results: Mapping[str, Any]) -> str:
    """Per method, its own metrics at the end of training (mean ± std over seeds)."""
    parts = []
    for label in results["labels"]:
        metrics = results["summary"].get(label, {}).get("method_metrics") or {}
        if not metrics:
            continue
        rows = "".join(
            f"<tr><th><code>{escape(key)}</code></th><td>{m['mean']:.4g} ± {m['std']:.2g}</td></tr>"
            for key, m in metrics.items()
        )
        dropped = int(results["summary"][label].get("method_metrics_dropped") or 0)
        more = f"; {dropped} more not recorded" if dropped else ""
        parts.append(
            f"<details><summary><code>{escape(label)}</code> ({len(metrics)} metrics{more})"
            "</summary>"
            f'<table class="kv">{rows}</table></details>'
        )
    if not parts:
        return ""
    return (
        '<section id="method-metrics"><h2>Method-specific metrics</h2>'
        "<p>Each selector's own metrics after the last step (pool sizes, arm probabilities, "
        "posterior and judge statistics; docs/selectors/ explains each), mean ± std over "
        "seeds. Per-step values are in <code>records.csv</code>.</p>"
        + "".join(parts)
        + "</section>"
    )


def _real_rl_section(results: Mapping[str, Any], href: str | None) -> str:
    """A paragraph saying the page is simulated, linking the real-RL results."""
    note = real_rl_note(results)
    if not note:
        return ""
    doc = str(results["real_rl"]["doc"])
    text = escape(note)
    if href:
        text = text.replace(escape(doc), f'<a href="{escape(href)}">{escape(doc)}</a>', 1)
    return f'<p class="lede" id="real-rl">{text}</p>'


def render_html(
    results: Mapping[str, Any],
    plots: Sequence[Plot],
    styles: Mapping[str, Style],
    command: str | None,
    version: str,
    real_rl_href: str | None = None,
) -> str:
    """The whole page as one string; deterministic (no timestamps) for identical inputs.
    `real_rl_href` links the real-RL results (docs/results/real_rl.md) when known."""
    scenario = results["scenario"]
    settings: Mapping[str, Any] = results["settings"]
    name = str(scenario.get("name", "?"))
    setting_rows = [(_SETTING_NAMES.get(k, k), v) for k, v in settings.items()]
    setting_rows.append(("methods", ", ".join(results["labels"])))
    config = list((scenario.get("config") or {}).items())
    cmd = command or "(not recorded: pass command= to write_report)"
    missing = {"effective_task_ratio", "success_heatmaps", "category_share"} - {
        p.name for p in plots
    }
    skipped = (
        f"<p>Not drawn (the results carry no data for them): {escape(', '.join(sorted(missing)))}."
        "</p>"
        if missing
        else ""
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>frontier-rft simulated benchmark: {escape(name)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>Simulated selector benchmark: learner <code>{escape(name)}</code></h1>",
        f'<p class="lede">{escape(learner_title(results))}</p>',
        _real_rl_section(results, real_rl_href),
        f'<p class="lede" id="advice">{escape(str(results["advice"]))}</p>'
        if results.get("advice")
        else "",
        '<section id="settings"><h2>Settings</h2>',
        _kv_table(setting_rows),
        "<h3>Command</h3>",
        f"<pre><code>{escape(cmd)}</code></pre>",
        f"<details><summary>Scenario configuration ({len(config)} fields)</summary>",
        _kv_table(config),
        "</details></section>",
        '<section id="summary"><h2>Summary</h2>',
        _summary_table(results, styles),
        f"<p>Mean ± std over seeds; TTB and BSF are relative to <code>"
        f"{escape(str(settings.get('baseline')))}</code>; the best value of each ranked column "
        'is in bold. Definitions are <a href="#definitions">at the end</a>.</p></section>',
        '<section id="figures"><h2>Figures</h2>',
        *(_figure(p) for p in plots),
        skipped,
        "</section>",
        _method_metrics(results),
        '<section id="notes"><h2>Method notes</h2>',
        _method_notes(results, styles),
        "</section>",
        '<section id="definitions"><h2>Definitions</h2><dl class="defs">',
        *(f"<dt>{escape(t)}</dt><dd>{escape(d)}</dd>" for t, d in DEFINITIONS),
        "</dl></section>",
        f"<footer>frontier-rft {escape(version)} · results format "
        f"<code>{escape(str(results.get('format')))}</code></footer>",
        "</main></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
