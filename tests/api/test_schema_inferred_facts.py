"""Which schema facts ('type', 'integer') a dataset's columns list as inferred from the data,
through every path that sets them: upload, the upload's schema field and PUT …/schema (the same
apply_overrides), type changes back and forth, entries stored before the facts were tracked.
Pure functions: no database."""

from __future__ import annotations

import pandas as pd

from app.datasets.schema import (
    apply_overrides, column_infos, infer_columns, normalize, public_columns, schema_update_from,
)


def _put(frame: pd.DataFrame, columns: list[dict], overrides: dict) -> tuple[pd.DataFrame, list[dict]]:
    frame, columns, _ = apply_overrides(frame, columns, schema_update_from(overrides, "the schema"))
    return frame, columns


def _facts(columns: list[dict]) -> dict[str, tuple[bool, list[str]]]:
    return {c["name"]: (c["integer"], c["inferred"]) for c in columns}


def test_a_text_column_declared_numeric_reads_its_integer_flag_from_the_data():
    """Ages uploaded as text and declared numeric: the owner declared the type, not whether the
    values are whole. The flag used to come out False and 'declared' (not in inferred), so a
    release gave the ages decimals while the schema claimed the owner had said so."""
    frame = normalize(pd.DataFrame({"age": ["20", "31", "45"], "score": ["0.5", "1", "2"]}))
    columns = infer_columns(frame)
    assert _facts(columns) == {"age": (False, ["type"]), "score": (False, ["type"])}
    frame, columns = _put(frame, columns, {"age": {"type": "numeric"}, "score": {"type": "numeric"}})
    assert _facts(columns) == {"age": (True, ["integer"]), "score": (False, ["integer"])}
    # declaring it as well, in the same override, makes it declared
    frame = normalize(pd.DataFrame({"age": ["20", "31", "45"]}))
    _, columns = _put(frame, infer_columns(frame), {"age": {"type": "numeric", "integer": False}})
    assert _facts(columns) == {"age": (False, [])}


def test_a_declared_integer_flag_lost_by_a_type_change_is_inferred_again():
    """numeric (integer declared) → categorical → numeric: the categorical step drops the flag,
    so the numeric column's flag is read from the data again, and says so."""
    frame = pd.DataFrame({"n": [1.0, 2.0, 3.0]})
    frame, columns = _put(frame, infer_columns(frame), {"n": {"integer": False}})
    assert _facts(columns) == {"n": (False, ["type"])}
    frame, columns = _put(frame, columns, {"n": {"type": "categorical"}})
    assert _facts(columns) == {"n": (False, [])}
    frame, columns = _put(frame, columns, {"n": {"type": "numeric"}})
    assert _facts(columns) == {"n": (True, ["integer"])}


def test_a_declared_fact_stays_declared_through_unrelated_overrides():
    frame = pd.DataFrame({"n": [1.0, 2.5, 3.0], "m": [1.0, 2.0, 3.0]})
    frame, columns = _put(frame, infer_columns(frame), {"n": {"integer": False}})
    frame, columns = _put(frame, columns, {"n": {"role": "sensitive"}, "m": {"bounds": [0, 10]}})
    assert _facts(columns) == {"n": (False, ["type"]), "m": (True, ["integer"])}


def test_an_entry_stored_before_the_facts_were_tracked_shows_them_inferred():
    """The dataset's public schema and the methods read the same facts: an old entry (no
    'inferred' key) is shown with both inferred, as the releases made from it warn, not as []
    (the response model's default, which claimed every fact declared)."""
    frame = pd.DataFrame({"n": [1.0, 2.0], "c": ["a", "b"], "b": [0.0, 1.0]})
    columns = infer_columns(normalize(frame))
    old = [{k: v for k, v in c.items() if k != "inferred"} for c in columns]
    old[2]["bounds"] = [0, 1]  # declared bounds assert the type
    shown = {c["name"]: c["inferred"] for c in public_columns(old)}
    assert shown == {"n": ["type", "integer"], "c": ["type"], "b": ["integer"]}
    assert {c.name: list(c.inferred) for c in column_infos(old)} == shown
