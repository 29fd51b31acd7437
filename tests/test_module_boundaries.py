"""A leading underscore means "this module's own": no module of app/ imports another's. The
module splits had left 49 such imports (8c52c86 made them public); this keeps it so."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"


def test_no_module_imports_another_modules_private_name():
    crossing = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("app"):
                crossing += [f"{path.relative_to(APP.parent)}: {node.module}.{alias.name}" for alias in node.names
                             if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert len(list(APP.rglob("*.py"))) > 100  # the tree was read
    assert crossing == []
