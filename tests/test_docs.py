"""Docs derive from the registry: every method has its page, and the generated indexes are
current (`veil docs` rewrites them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pydantic import ValidationError

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


def _job_examples() -> list[tuple[str, dict]]:
    """Every `-d '{…"method": …}'` body of a curl call in the docs (README and every page)."""
    import json
    import re

    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for body in re.findall(r"-d '(\{.*?\})'", page.read_text(), flags=re.S):
            try:
                data = json.loads(body)
            except json.JSONDecodeError:
                continue  # shell-quoted bodies with $VARIABLES (the README's)
            if isinstance(data, dict) and "method" in data:
                found.append((f"{page.relative_to(ROOT)}: {data['method']}", data))
    return found


def test_every_documented_job_body_validates_against_its_method():
    """The examples' parameter names and values, checked by the method's own params model (a
    renamed or re-bounded parameter breaks its example here, not for a user)."""
    from app.privacy import registry

    registry.load_all()
    examples = _job_examples()
    assert len(examples) >= 20  # every method page has one
    for where, body in examples:  # a failure names the page and the method
        spec = registry.get(body["method"])
        assert spec is not None, f"{where}: no such method"
        try:
            spec.params.model_validate(body.get("params", {}))
        except ValidationError as exc:
            raise AssertionError(f"{where}: {exc}") from None


def test_every_documented_hierarchy_build_body_validates():
    """The `-d '{"builder": …}'` bodies of docs/hierarchies.md, checked by the endpoint's own
    body model (a renamed option breaks its example here)."""
    import json
    import re

    from pydantic import TypeAdapter

    from app.privacy.anonymity.builders import HierarchyBuild

    adapter = TypeAdapter(HierarchyBuild)
    bodies = [json.loads(body) for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
              for body in re.findall(r"-d '(\{.*?\})'", page.read_text(), flags=re.S) if '"builder"' in body]
    assert {body["builder"] for body in bodies} == {"redaction", "date", "intervals", "groups"}
    for body in bodies:
        adapter.validate_python(body)


def test_veil_docs_leaves_plugin_methods_out_of_veils_own_pages():
    """The tests load their diagnostic methods with VEIL_PLUGINS, as an operator loads a
    third party's: `veil docs` run with it set wrote their rows into Veil's README and its
    methods index (a checkout's, or an installed package's beside site-packages)."""
    from app.docs_index import methods_table
    from app.privacy import registry

    assert registry.get("diag_sleep") is not None  # loaded in this process
    table = methods_table("")
    assert "diag_sleep" not in table and "`errph`" in table


def test_veil_docs_prints_a_page_for_a_plugin_method():
    env = {**os.environ, "VEIL_PLUGINS": "tests.support.diagnostics"}
    done = subprocess.run([sys.executable, "-m", "app", "docs", "--method", "diag_dp_hog"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("# `diag_dp_hog`") and "test-suite diagnostic (diag_dp_hog)" in page
    for said in ("| `epsilon` | number | `1.0` | > 0, ≤ 100 |", "| `draw_first` | boolean | `false` |",
                 "debited", '"method": "diag_dp_hog"'):
        assert said in page, page
    unknown = subprocess.run([sys.executable, "-m", "app", "docs", "--method", "no_such"], capture_output=True,
                             text=True, env=env, cwd=ROOT, timeout=120)
    assert unknown.returncode != 0 and "no method named 'no_such'" in unknown.stderr, unknown.stderr
