"""The methods index in the docs, generated from the registry (`veil docs`): the table in
docs/methods/README.md and the same table between markers in README.md. A test fails when
either is stale or a method's page is missing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.privacy import registry

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- methods:start -->", "<!-- methods:end -->"


def methods_table(link_prefix: str) -> str:
    """Veil's own methods: a VEIL_PLUGINS method is not written into Veil's pages (`veil docs`
    run with the variable set wrote the test suite's diagnostics into README.md)."""
    lines = ["| method | kind | family | guarantee | paper |", "|---|---|---|---|---|"]
    for spec in registry.all_methods():
        if registry.is_plugin(spec.name):
            continue
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


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_of(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(_type_of(p) for p in prop["anyOf"]))
    if "enum" in prop or "const" in prop:
        return "string" if all(isinstance(v, str) for v in prop.get("enum", [prop.get("const")])) else "value"
    kind = prop.get("type", "object" if "$ref" in prop else "value")
    if kind == "array" and isinstance(prop.get("items"), dict):
        return f"array of {_type_of(prop['items'])}"
    return "null" if kind == "null" else kind


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) >= 1000 else f"{value:g}"


def _bounds_of(prop: dict[str, Any]) -> str:
    said = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in prop:
            said.append(f"{sign} {_number(prop[key])}")
    for key, words in (("minItems", "at least {} items"), ("maxItems", "at most {} items"),
                       ("minLength", "at least {} characters"), ("maxLength", "at most {} characters")):
        if key in prop:
            said.append(words.format(prop[key]))
    if "enum" in prop:
        said.append("one of " + ", ".join(f"`{json.dumps(v)}`" for v in prop["enum"]))
    for option in prop.get("anyOf", []):
        if option.get("type") != "null" and (inner := _bounds_of(option)):
            said.append(inner)
    return ", ".join(said)


def _example_value(prop: dict[str, Any]) -> Any:
    kind = _type_of(prop)
    return {"number": 1, "integer": 1, "boolean": True}.get(kind, [] if kind.startswith("array") else "…")


def render_page(spec: registry.MethodSpec) -> str:
    """One method's page from its registration (`veil docs --method NAME`): what it is, its
    input, its ε, its parameters as /v1/methods serves them, and a job to submit. Veil's own
    pages are written by hand around the same facts; a VEIL_PLUGINS method gets this one."""
    schema = spec.params.model_json_schema()
    props, required = schema.get("properties", {}), set(schema.get("required", []))
    sources = {"dataset": "a dataset (`dataset_id`)", "release": "a release (`release_id`)",
               "none": "no input (the shared datasets, or data it generates)"}
    epsilon = ("debited from the root dataset's budget when the job is accepted (`MethodSpec.epsilon`), "
               "refunded when it fails on its input, at a limit or by a cancel before drawing any "
               "randomness (docs/architecture.md, Budget)" if spec.epsilon is not None else "none debited")
    lines = [f"# `{spec.name}`", "", _cell(spec.summary), "", "| | |", "|---|---|",
             f"| kind | {spec.kind.value} (family {_cell(spec.family)}) |",
             f"| input | {' or '.join(sources[s.value] for s in sorted(spec.sources))}; "
             f"{', '.join(sorted(s.value for s in spec.shapes))} |",
             f"| ε | {epsilon} |", f"| guarantee | {_cell(spec.guarantee)} |", f"| paper | {_cell(spec.paper)} |"]
    if spec.slow_params:
        lines.append(f"| slow parameters | {', '.join(f'`{n}`' for n in spec.slow_params)} |")
    lines += ["", "## Parameters", ""]
    if props:
        lines += ["| parameter | type | default | bounds | description |", "|---|---|---|---|---|"]
        for name, prop in props.items():
            default = (f"`{json.dumps(prop['default'])}`" if "default" in prop
                       else "required" if name in required else "")
            lines.append(f"| `{name}` | {_type_of(prop)} | {default} | {_bounds_of(prop)} | "
                         f"{_cell(prop.get('description', ''))} |")
    else:
        lines.append("None.")
    source = next(s.value for s in sorted(spec.sources))
    body = {"method": spec.name, "params": {n: _example_value(props[n]) for n in props if n in required}}
    if source != "none":
        body = {f"{source}_id": f"${source.upper()}", **body}
    lines += ["", "## Example", "", "```sh",
              "curl -s -H \"$H\" -H 'Content-Type: application/json' localhost:8000/v1/jobs \\",
              f"     -d '{json.dumps(body, ensure_ascii=False)}'", "```", ""]
    return "\n".join(lines)
