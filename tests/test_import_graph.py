"""The import graph of fwdoctor has no cycles, and the image readers and the renderers sit
where the layering says (issue 29 item 8).

Before, `fwdoctor.image` asked `fwdoctor.probes` what to keep, `fwdoctor.probes.system`
imported `fwdoctor.imagefs` to tell an image host, and `fwdoctor.imagefs` imported
`fwdoctor.image` back for its tar-member policy: one cycle, hidden in imports inside
functions. Now the probes only declare what they read (`READS`, plain data), the image
package reads that declaration, and nothing points back.

Read from the source with `ast`, like tests/test_architecture.py: an import inside a
function is an edge of the graph as much as one at the top (hiding a cycle in a function
does not break it). Only `if TYPE_CHECKING:` blocks are left out: they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

# The repository folders and the import names they build (pyproject.toml `package-dir`).
ROOTS = {"fwdoctor": REPO / "doctor", "fwdoctor.recipes": REPO / "recipes"}

# Cycles that run through late imports only, known and left for a later item; any other
# cycle (or a new module joining this one) fails. fwdoctor.kb loads an area's module on
# first use and each area module imports `Ctx` from fwdoctor.kb; kb.errors and
# triage.errors share the error-signature rows.
KNOWN_LATE_CYCLES = (
    frozenset({
        "fwdoctor.kb", "fwdoctor.kb.build", "fwdoctor.kb.conda", "fwdoctor.kb.cuda", "fwdoctor.kb.docker",
        "fwdoctor.kb.errors", "fwdoctor.kb.extensions", "fwdoctor.kb.frameworks", "fwdoctor.kb.gpus",
        "fwdoctor.kb.libs", "fwdoctor.kb.nodetypes", "fwdoctor.kb.torch", "fwdoctor.triage.errors",
    }),
)


def modules() -> dict[str, Path]:
    """Every fwdoctor module name -> its file."""
    found: dict[str, Path] = {}
    for package, root in ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes inside `if TYPE_CHECKING:` blocks (imports for annotations alone)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(inner) for part in node.body for inner in ast.walk(part))
    return skip


def _top_level(tree: ast.Module) -> list[ast.AST]:
    """The statements that run when the module is imported: the body, and what sits in its
    if/try/with blocks and class bodies; not function bodies."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def imports(name: str, path: Path, known: dict[str, Path], late: bool = True) -> set[str]:
    """The fwdoctor modules `name` imports by name (a parent package that Python also runs
    is not an edge: it never imports its submodule back at that point)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree)
    nodes = ast.walk(tree) if late else _top_level(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes:
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known)
    return {m for m in found if m in known and m != name}


def graph(late: bool = True) -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known, late) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _show(components: list[frozenset[str]], edges: dict[str, set[str]]) -> list[str]:
    return [" ; ".join(f"{m} -> {', '.join(sorted(edges[m] & c))}" for m in sorted(c)) for c in components]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_cycle_finder_finds_a_cycle_through_a_late_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_fwdoctor_modules_at_module_level():
    edges = graph(late=False)
    assert _show(cycles(edges), edges) == []


def test_no_new_import_cycle_even_through_imports_inside_functions():
    edges = graph(late=True)
    unknown = [c for c in cycles(edges) if c not in KNOWN_LATE_CYCLES]
    assert _show(unknown, edges) == []


def test_no_probe_imports_the_image_package():
    """The probes declare what they read (fwdoctor.probes.READS); the image package reads
    that. A probe that needs to know it reads an image asks `host.is_image`."""
    edges = graph(late=True)
    bad = sorted(f"{m} imports {d}" for m, deps in edges.items() if _within(m, "fwdoctor.probes")
                 for d in deps if _within(d, "fwdoctor.image"))
    assert bad == []


def test_nothing_inside_the_image_package_is_on_an_import_cycle():
    edges = graph(late=True)
    touching = [c for c in cycles(edges) if any(_within(m, "fwdoctor.image") for m in c)]
    assert _show(touching, edges) == []


def test_the_core_below_the_renderers_imports_no_renderer():
    """Probes observe, rules judge, the KB is data: none of them renders (fwdoctor.render
    sits on top of the Report they make)."""
    below = ("fwdoctor.probes", "fwdoctor.rules", "fwdoctor.kb", "fwdoctor.model", "fwdoctor.host",
             "fwdoctor.engine", "fwdoctor.findings", "fwdoctor.image")
    edges = graph(late=True)
    bad = sorted(f"{m} imports {d}" for m, deps in edges.items() if any(_within(m, b) for b in below)
                 for d in deps if _within(d, "fwdoctor.render"))
    assert bad == []


def test_the_renderers_are_on_no_import_cycle():
    edges = graph(late=True)
    touching = [c for c in cycles(edges) if any(_within(m, "fwdoctor.render") for m in c)]
    assert _show(touching, edges) == []
