"""The methods index in the docs, generated from the registry (`veil docs`): the table in
docs/methods/README.md and the same table between markers in README.md. A test fails when
either is stale or a method's page is missing."""

from __future__ import annotations

import re
from pathlib import Path

from app.privacy import registry

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- methods:start -->", "<!-- methods:end -->"


def methods_table(link_prefix: str) -> str:
    lines = ["| method | kind | family | guarantee | paper |", "|---|---|---|---|---|"]
    for spec in registry.all_methods():
        page = Path(spec.docs).name if spec.docs else ""
        name = f"[`{spec.name}`]({link_prefix}{page})" if page else f"`{spec.name}`"
        paper = spec.paper.split(" (")[0] if len(spec.paper) > 90 else spec.paper
        lines.append(f"| {name} | {spec.kind.value} | {spec.family} | {spec.guarantee} | {paper} |")
    return "\n".join(lines)


def render_index() -> str:
    return ("# Methods\n\nGenerated from the method registry by `veil docs`; every method's "
            "parameters, with defaults and bounds, are also served at `GET /v1/methods`.\n\n"
            + methods_table("") + "\n")


def render_readme(readme: str) -> str:
    block = f"{START}\n{methods_table('docs/methods/')}\n{END}"
    return re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, readme, flags=re.S)


def write() -> list[Path]:
    index = ROOT / "docs" / "methods" / "README.md"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(render_index())
    readme = ROOT / "README.md"
    readme.write_text(render_readme(readme.read_text()))
    return [index, readme]
