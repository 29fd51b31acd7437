"""Each method page's parameter table states the bounds and defaults its JSON Schema (GET
/v1/methods) gives: a generated form or client reads the schema, a person the page (apic
acceptance check: mst's and aim's `bins` were 2..256 on the page and unbounded in the schema,
as were png's keep probabilities and the experiments' lists of p, which validators bound)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
NUMBER = r"10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|\d+(?:\.\d+)?e-?\d+|-?\d[\d,]*(?:\.\d+)?(?:\s*×\s*10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?"


def _number(text: str) -> float:
    text = text.replace(",", "").strip()
    power = re.fullmatch(r"(?:(.+?)\s*×\s*)?10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", text)
    if power:
        return float(power.group(1) or 1) * 10 ** int(power.group(2).translate(SUPERSCRIPT))
    return float(text)


def _rows(page: str) -> dict[str, list[str]]:
    """name → [type, default, …] of the page's `| name | type | default | meaning |` table."""
    rows, in_table = {}, False
    for line in page.splitlines():
        if re.match(r"^\|\s*name\s*\|\s*type\s*\|\s*default\s*\|", line):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        if not in_table or set(line) <= set("|-: "):
            continue
        cells = [c.strip().replace("\0", "|") for c in line.replace("\\|", "\0").strip().strip("|").split("|")]
        for name in re.findall(r"`([A-Za-z_0-9]+)`", cells[0]):
            rows[name] = cells[1:]
    return rows


def _scalar(prop: dict) -> dict:
    """The number branch of a property (`int | null`, `int | {column: …}` → the int)."""
    for branch in [prop, *prop.get("anyOf", [])]:
        if branch.get("type") in ("integer", "number"):
            return branch
    return {}


def _stated_range(type_cell: str):
    """(low, low_inclusive, high, high_inclusive) a type cell states, or None."""
    cell = type_cell.translate({ord("−"): "-"})
    m = re.search(rf"([\[(])\s*({NUMBER})\s*,\s*({NUMBER})\s*([\])])", cell)
    if m:
        return _number(m.group(2)), m.group(1) == "[", _number(m.group(3)), m.group(4) == "]"
    m = re.search(rf"({NUMBER})\s*\.\.\s*({NUMBER})", cell)
    if m:
        return _number(m.group(1)), True, _number(m.group(2)), True
    return None


def _cases():
    from app.privacy import registry

    registry.load_all()
    for spec in registry.all_methods():
        if not spec.docs or not spec.docs.startswith("docs/methods/"):
            continue
        rows = _rows((ROOT / spec.docs).read_text())
        props = spec.params.model_json_schema().get("properties", {})
        for name, cells in rows.items():
            if name in props:
                yield spec.name, name, cells, props[name]


CASES = list(_cases())


def test_the_tables_were_read():
    assert len(CASES) > 150, len(CASES)


@pytest.mark.parametrize("method,name,cells,prop", CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES])
def test_a_stated_range_is_the_schemas(method, name, cells, prop):
    stated = _stated_range(cells[0])
    if stated is None:
        return
    low, low_in, high, high_in = stated
    number = _scalar(prop)
    if not number:  # a list or map: the range is its entries'
        entries = list(_numbers(prop))
        assert entries, (cells[0], prop)
        for number in entries:
            _assert_bounds(number, cells[0], low, low_in, high, high_in)
        return
    _assert_bounds(number, cells[0], low, low_in, high, high_in)


def _numbers(schema: dict):
    if schema.get("type") in ("integer", "number"):
        yield schema
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _numbers(schema[key])
    for branch in [*schema.get("anyOf", []), *schema.get("prefixItems", [])]:  # a tuple's items too
        yield from _numbers(branch)


def _assert_bounds(number: dict, cell: str, low, low_in, high, high_in):
    schema_low = number.get("minimum", number.get("exclusiveMinimum"))
    schema_high = number.get("maximum", number.get("exclusiveMaximum"))
    assert schema_low is not None and math.isclose(schema_low, low), (cell, number)
    assert ("minimum" in number) == low_in, (cell, number)
    assert schema_high is not None and math.isclose(schema_high, high), (cell, number)
    assert ("maximum" in number) == high_in, (cell, number)


@pytest.mark.parametrize("method,name,cells,prop", CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES])
def test_a_stated_default_is_the_schemas(method, name, cells, prop):
    stated = cells[1].strip("`* ").replace("`", "")
    if re.fullmatch(NUMBER, stated):
        assert math.isclose(prop["default"], _number(stated)), (stated, prop.get("default"))
    elif stated in ("true", "false"):
        assert prop["default"] is (stated == "true"), (stated, prop.get("default"))
    elif stated in ("null", "none"):
        assert prop.get("default") is None, (stated, prop.get("default"))
    elif stated == "required":
        assert "default" not in prop
    elif re.fullmatch(r'"?[a-z_]+"?', stated) and "enum" in prop:
        assert prop["default"] == stated.strip('"'), (stated, prop.get("default"))
