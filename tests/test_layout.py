"""The package follows the data flow: no import cycle, and each layer imports only from below."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import forge_core

ROOT = Path(forge_core.__file__).parent
# Bottom to top: a module may import from its own layer and the layers before it.
LAYERS = (
    "errors", "config", "arms", "records", "store", "data", "hosts", "evidence", "enumeration", "routing", "training",
    "evaluation", "jobs", "server", "cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """forge_core module -> the forge_core modules it imports (lazy imports included)."""
    modules = {module_name(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("forge_core"):
                targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
                graph[name] |= {t for t in targets if t in modules and t != name and t != "forge_core"}
    return graph


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return LAYERS.index(top)


def test_every_module_has_a_layer() -> None:
    assert all(layer(module) >= 0 for module in import_graph())


def test_layers_import_only_from_below() -> None:
    upward = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets if layer(b) > layer(a))
    assert upward == []


def test_no_import_cycle() -> None:
    graph = import_graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target] if target in path else [module, target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []
