"""The import direction of src/frontier_rft: the layers of docs/architecture.md, no cycles.

Every module is parsed with `ast`; every import counts, including those inside functions
and under `if TYPE_CHECKING:`, and `importlib.import_module("frontier_rft...")` with a
literal name. A module belongs to a *unit*: its subpackage (`core`, `selectors`, ...), or
for a top-level module its own name (`progress`, `metrics_log`, `__main__`), or
`__init__` for the package's own `__init__.py` (the public API). The layers of those
units are read from the picture in docs/architecture.md, the one place they are written.

The scripts of `benchmarks/` sit above the package: they may import frontier_rft (and each
other, without a cycle), and no module of frontier_rft imports one of them.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "frontier_rft"
BENCHMARKS = REPO / "benchmarks"
DOC = REPO / "docs" / "architecture.md"

# Imports that break the layer rule today, each with the issue that removes it. Nothing
# else may: a new one fails test_no_import_breaks_the_layers, and an entry whose import is
# gone fails test_every_allowed_import_still_exists (delete the entry with the import).
ALLOWED: dict[tuple[str, str], str] = {}


# ---------------------------------------------------------------------------- the graph
def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = module_files()


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every dotted name `module` imports (absolute, relative resolved), anywhere in it."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from pkg import sub` imports the submodule `pkg.sub`; any other name is pkg's.
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in MODULES else base
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def owner(name: str) -> str | None:
    """The module of the package that `name` (a module or a name in one) resolves to."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def module_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for name in imported_names(module, path):
            target = owner(name) if name.split(".")[0] == "frontier_rft" else None
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def unit(module: str) -> str:
    """The layered unit of a module: its subpackage, top-level module, or `__init__`."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


GRAPH = module_graph()


# ---------------------------------------------------------------------------- the layers
def read_layers() -> dict[str, int]:
    """Unit -> layer number, from the first fenced block after `## Layers` in the doc."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1]
    block = section.split("```", 2)[1]
    layers: dict[str, int] = {}
    for line in block.splitlines()[1:]:
        match = re.match(r"\s*(\d+)\s+(.*)", line)
        if not match:
            continue
        for name in re.sub(r"\(.*?\)", "", match.group(2)).split():
            assert name not in layers, f"{name} is placed in two layers of {DOC.name}"
            layers[name] = int(match.group(1))
    return layers


LAYERS = read_layers()


def breaks_layers(importer: str, imported: str) -> bool:
    """A module may import its own unit, or any unit of a lower layer; nothing else."""
    a, b = unit(importer), unit(imported)
    return a != b and LAYERS[b] >= LAYERS[a]


def test_the_layers_are_read() -> None:
    """Guard against a parser that reads nothing: the doc's picture has all its layers."""
    assert LAYERS["core"] == 0 and LAYERS["cli"] > LAYERS["selectors"] > LAYERS["core"]
    assert LAYERS["service"] > LAYERS["selectors"] and LAYERS["integrations"] > LAYERS["service"]


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Module level, inside a function, TYPE_CHECKING and import_module are all edges."""
    assert "frontier_rft.selectors.registry" in GRAPH["frontier_rft.selectors.persistence"]
    assert "frontier_rft.progress" in GRAPH["frontier_rft.features.policy"]  # module level
    assert "frontier_rft.core.yamlsafe" in GRAPH["frontier_rft.integrations.preflight"]  # in a def
    assert "frontier_rft.core.selector" in GRAPH["frontier_rft.reporting.colors"]  # TYPE_CHECKING
    # No module of ours loads one of ours through importlib with a literal name, so the
    # parser's reading of such a call is checked on a file of its own.
    probe = tmp_path / "probe.py"
    probe.write_text('import importlib\nimportlib.import_module("frontier_rft.tasks.taxonomy")\n')
    assert "frontier_rft.tasks.taxonomy" in set(imported_names("frontier_rft.probe", probe))


def test_the_rule_can_fail() -> None:
    assert breaks_layers("frontier_rft.core.pool", "frontier_rft.selectors.registry")
    assert breaks_layers("frontier_rft.training.grpo", "frontier_rft.reporting.plots")  # peers
    assert not breaks_layers("frontier_rft.selectors.bots", "frontier_rft.core.pool")
    assert not breaks_layers("frontier_rft.core.pool", "frontier_rft.core.config")


def test_every_unit_has_a_layer() -> None:
    """A new subpackage or top-level module is placed in docs/architecture.md's picture."""
    units = {unit(m) for m in MODULES}
    assert not units - set(LAYERS), f"place these in {DOC.name}'s layers: {units - set(LAYERS)}"
    assert not set(LAYERS) - units, f"{DOC.name} names units that do not exist"


def test_no_import_breaks_the_layers() -> None:
    broken = sorted((a, b) for a, targets in GRAPH.items() for b in targets if breaks_layers(a, b))
    new = [f"{a} -> {b}" for a, b in broken if (a, b) not in ALLOWED]
    assert not new, (
        "imports against the layers of docs/architecture.md (a module imports only its own "
        "unit or lower layers; units of one layer do not import each other):\n" + "\n".join(new)
    )


@pytest.mark.parametrize("edge", sorted(ALLOWED), ids=lambda e: f"{e[0]}->{e[1]}")
def test_every_allowed_import_still_exists(edge: tuple[str, str]) -> None:
    a, b = edge
    assert b in GRAPH.get(a, set()), f"{a} no longer imports {b}: delete it from ALLOWED"
    assert breaks_layers(a, b), f"{a} -> {b} follows the layers now: delete it from ALLOWED"


def test_no_cycle_between_units() -> None:
    units: dict[str, set[str]] = defaultdict(set)
    for a, targets in GRAPH.items():
        units[unit(a)] |= {unit(b) for b in targets if unit(b) != unit(a)}
    graphlib.TopologicalSorter(units).prepare()  # raises CycleError naming the cycle


def test_no_cycle_between_modules() -> None:
    try:
        graphlib.TopologicalSorter(GRAPH).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"modules import each other (move what both need below them): {exc.args[1]}")


def test_private_names_stay_in_their_package() -> None:
    """A `_name` is imported only by modules of its own package (an adapter reads another
    adapter's helpers through a public, documented function: integrations/preflight.py)."""
    wrong = []
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            source = owner(node.module)
            if source is None:
                continue
            home = source if MODULES[source].name == "__init__.py" else source.rpartition(".")[0]
            private = [a.name for a in node.names if re.fullmatch(r"_[^_].*", a.name)]
            if private and home != package:
                wrong.append(f"{module} imports {', '.join(private)} from {source}")
    assert not wrong, "make these public where both can reach them:\n" + "\n".join(wrong)


# ---------------------------------------------------------------------------- benchmarks/
def benchmark_graph(directory: Path) -> dict[str, set[str]]:
    """Script name -> the scripts of `directory` it imports: as a sibling (`import allocation`,
    how a script run from its folder finds another) or as `benchmarks.allocation`."""
    stems = {p.stem for p in directory.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(directory.glob("*.py")):
        edges = graph[path.stem] = set()
        for name in imported_names(f"benchmarks.{path.stem}", path):
            parts = name.split(".")
            top = parts[1] if parts[0] == "benchmarks" and len(parts) > 1 else parts[0]
            if top in stems and top != path.stem:
                edges.add(top)
    return graph


def test_the_package_never_imports_a_benchmark() -> None:
    """frontier_rft sits below benchmarks/: no module of it imports a script there."""
    stems = {p.stem for p in BENCHMARKS.glob("*.py")}
    assert stems, "benchmarks/ holds no script: the check would check nothing"
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        for name in imported_names(module, path)
        if name.split(".")[0] == "benchmarks" or name.split(".")[0] in stems
    )
    assert not wrong, "move what both need into frontier_rft:\n" + "\n".join(wrong)


def test_benchmarks_import_what_the_package_has() -> None:
    """A benchmark's frontier_rft imports name modules that exist (none left behind by a move)."""
    missing = sorted(
        f"{path.name} imports {name}"
        for path in sorted(BENCHMARKS.glob("*.py"))
        for name in imported_names(f"benchmarks.{path.stem}", path)
        if name.split(".")[0] == "frontier_rft" and owner(name) is None
    )
    assert not missing, "\n".join(missing)


def test_no_cycle_between_benchmarks(tmp_path: Path) -> None:
    graphlib.TopologicalSorter(benchmark_graph(BENCHMARKS)).prepare()
    # The check can fail: two scripts that import each other, one of them by package name.
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("from benchmarks.a import main\n")
    assert benchmark_graph(tmp_path) == {"a": {"b"}, "b": {"a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(benchmark_graph(tmp_path)).prepare()


# ---------------------------------------------------------------------------- ask the row
# A line that tells a step-sampler kind or wrap by its name or class (issue 90): its facts
# live on its `KINDS` / `WRAPS` row and are asked for there (`KindRow.fact`, `SamplerSpec.fact`,
# a wrap's `refusal`), never inferred from the name. The count is the issue's own command,
# `git grep -nE "<NAME_BRANCH>" -- src`.
NAME_BRANCH = re.compile(
    r"(==|!=|isinstance).*(Backfill|Rescue|HardGroups|FewerRollouts|DynamicSampling|"
    r"PassThrough|Allocation|PilotCommit|ConformalStop)(\.kind|\))"
)
TRL = PACKAGE / "integrations" / "trl"
MOST_NAME_BRANCHES = 10
"""Issue 90's target for all of src."""
MOST_NAME_BRANCHES_TRL = 3
"""Issue 90's target for integrations/trl/ (it holds none today: its door asks
driver_kinds' rows)."""
MOST_NAME_BRANCHES_OUTSIDE_TRL = 7
"""The rest of src, met on its own: the flat flags' and the simulator's spellings of a kind
(`SamplerFlags.spec`, `runner.spelled`), a report's allocation flags, the simulator's check of
a fewer-rollouts entry."""


def name_branches() -> dict[Path, list[str]]:
    """Per file of src, its lines that branch on a kind's or wrap's name."""
    out: dict[Path, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if NAME_BRANCH.search(line)
        ]
        if lines:
            out[path] = lines
    return out


def test_no_new_branch_on_a_sampler_kinds_name() -> None:
    found = name_branches()
    trl = sum(len(v) for k, v in found.items() if TRL in k.parents)
    total = sum(len(v) for v in found.values())
    shown = "\n".join(
        f"{k.relative_to(REPO)}: {line.strip()}" for k, v in found.items() for line in v
    )
    assert total - trl <= MOST_NAME_BRANCHES_OUTSIDE_TRL, f"ask the kind's row instead:\n{shown}"
    assert trl <= MOST_NAME_BRANCHES_TRL, f"ask the kind's row instead:\n{shown}"
    assert total <= MOST_NAME_BRANCHES, f"ask the kind's row instead:\n{shown}"


def test_no_module_of_src_is_over_800_lines() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800
    }
    assert long == {}, "split it by what it holds"
