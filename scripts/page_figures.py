"""Every figure the README and docs/results/summary.md quote, from the committed reports.

    .venv/bin/python scripts/page_figures.py            # print each figure: NAME: TEXT
    .venv/bin/python scripts/page_figures.py --write    # write them into the pages' markers
    .venv/bin/python scripts/page_figures.py --check    # exit 1 naming each that differs

A page marks a figure `<!--fig:NAME-->TEXT<!--/fig-->`; frontier_rft.bench.real_rl.page_figures
says where each comes from (a committed report, rebuilt from the run ledger by
scripts/rebuild_ledger_reports.py). Run it after rebuilding the reports;
tests/test_page_figures.py runs --check's comparison.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from frontier_rft.bench.real_rl.page_figures import (
    CHECKED,
    PAGES,
    compute,
    differences,
    render,
    unmarked,
)

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the figures into the pages")
    mode.add_argument("--check", action="store_true", help="exit 1 if a page's figure differs")
    args = p.parse_args(argv)
    values = compute(REPO / "benchmarks" / "results")
    problems = []
    for name in (*PAGES, *CHECKED):
        path = REPO / name
        page = path.read_text(encoding="utf-8")
        if args.write:
            path.write_text(render(page, values), encoding="utf-8")
        problems += [
            f"{name}: {d}"
            for d in differences(render(page, values) if args.write else page, values)
        ]
        if name in PAGES:
            problems += [f"{name}: unmarked figure {u}" for u in unmarked(page)]
    if not (args.write or args.check):
        print("\n".join(f"{k}: {v}" for k, v in values.items()))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
