"""Docs derive from the registry: every method has its page, and the generated indexes are
current (`veil docs` rewrites them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _registry_docs() -> list[tuple[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "VEIL_PLUGINS"}
    code = ("from app.privacy import registry\n"
            "for s in registry.all_methods(): print(s.name, s.docs)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env, cwd=ROOT).stdout
    return [tuple(line.split(" ", 1)) for line in out.splitlines() if line.strip()]


def test_every_method_has_a_doc_page_with_the_required_sections():
    for name, docs in _registry_docs():
        page = ROOT / docs
        assert docs and page.exists(), f"{name}: missing doc page {docs!r}"
        text = page.read_text().lower()
        assert "curl" in text or "experiment" in name, f"{name}: no curl example in {docs}"
        assert "guarantee" in text or "privacy" in text, f"{name}: no guarantee section in {docs}"


def test_generated_indexes_are_current():
    env = {k: v for k, v in os.environ.items() if k != "VEIL_PLUGINS"}
    code = ("from pathlib import Path\n"
            "from app.docs_index import render_index, render_readme, ROOT\n"
            "assert (ROOT / 'docs/methods/README.md').read_text() == render_index(), 'docs/methods/README.md'\n"
            "readme = (ROOT / 'README.md').read_text()\n"
            "assert readme == render_readme(readme), 'README.md'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, f"stale methods index, run `veil docs`: {done.stderr[-300:]}"


def test_readme_shows_the_two_commands_first():
    readme = (ROOT / "README.md").read_text()
    assert readme.index("make run") < readme.index("curl") and "make test" in readme
