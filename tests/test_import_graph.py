"""The import graph of longrun/**, read with `ast`: no cycles among its modules (imports inside
functions count; `if TYPE_CHECKING:` blocks do not), and no module outside longrun/client/
imports another module's `_private` name. Run `python tests/test_import_graph.py` to print both."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.pyast import parse

ROOT = Path(__file__).resolve().parents[1] / "longrun"


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> list[ast.ImportFrom | ast.Import]:
    found: list[ast.ImportFrom | ast.Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> modules it imports, [(importer, module, private name)])."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    private: list[tuple[str, str, str]] = []
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _imports(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges[mod] |= {a.name for a in node.names if a.name in mods}
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in mods:
                    edges[mod].add(f"{target}.{alias.name}")
                elif target in mods:
                    edges[mod].add(target)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append((mod, target, alias.name))
    for mod in edges:
        edges[mod].discard(mod)
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
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
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_reader_sees_imports() -> None:
    edges, _ = graph()
    assert "longrun.client.decide" in edges["longrun.client.async_client"]
    assert "longrun.client.calls" in edges["longrun.client.decide"]
    assert "longrun.console" in edges["longrun.cli.commands.serve"]  # imports inside functions count


def test_no_import_cycles() -> None:
    edges, _ = graph()
    assert cycles(edges) == []


def test_no_private_names_cross_modules_outside_the_client() -> None:
    _, private = graph()
    assert [p for p in private if not p[0].startswith("longrun.client")] == []


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_console_imports_nothing_from_the_cli_or_the_demo() -> None:
    edges, _ = graph()
    bad = [(m, t) for m, ts in edges.items() if _inside(m, "longrun.console") for t in ts
           if _inside(t, "longrun.cli") or _inside(t, "longrun.demo")]
    assert bad == []


def test_the_cli_launches_the_console_only_through_its_public_package() -> None:
    """`longrun serve` has to start the console, so the CLI may import `longrun.console` itself
    (its `__all__`), never one of its modules: the two front ends share code only through
    `longrun.client`."""
    edges, _ = graph()
    bad = [(m, t) for m, ts in edges.items() if _inside(m, "longrun.cli") for t in ts
           if t.startswith("longrun.console.")]
    assert bad == []


def test_the_service_imports_nothing_from_the_cli_or_the_demo() -> None:
    """`longrun/service/` is the process-level part (worker, dev stack, settings): the front ends
    depend on it, never the other way round."""
    edges, _ = graph()
    bad = [(m, t) for m, ts in edges.items() if _inside(m, "longrun.service") for t in ts
           if _inside(t, "longrun.cli") or _inside(t, "longrun.demo")]
    assert bad == []


if __name__ == "__main__":
    e, p = graph()
    print("cycles:", cycles(e))
    print("private imports:", p)
