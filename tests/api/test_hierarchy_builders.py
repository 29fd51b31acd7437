"""POST /v1/datasets/{id}/hierarchies/{column}/build: a hierarchy generated from a builder's
specification is stored as an upload is — checked against the data, read back by GET as the
ARX text the builder made, replaced by a later upload or build, audited — and the anonymity
jobs generalize along it (docs/hierarchies.md, "Building one")."""

from __future__ import annotations

import hashlib
import io

import pandas as pd
import pytest

from app.privacy.anonymity.builders import (
    DateBuild, GroupsBuild, IntervalsBuild, RedactionBuild, build_hierarchy, to_arx_text,
)
from app.privacy.anonymity.hierarchies import parse_arx_hierarchy, value_keys
from app.privacy.anonymity.interval_labels import interval_label_warnings
from app.worker import runner
from tests.support.api import assert_problem, auth, submit, upload

ZIPS = ["02139", "02142", "02144", "94110", "94117", "10001"]
JOBS = ["Tech-support", "Craft-repair", "Sales", "Exec-managerial", "Priv-house-serv"]
ROWS = 240


def _data() -> bytes:
    lines = ["zip,code,day,age,job,y"]
    for i in range(ROWS):
        day = f"20{10 + i % 12:02d}-{1 + i % 12:02d}-{1 + i % 28:02d}"
        lines.append(f"{ZIPS[i % 6]},{ZIPS[i % 6]},{day},{18 + (i * 7) % 60},{JOBS[i % 5]},{'ab'[(i // 3) % 2]}")
    return ("\n".join(lines) + "\n").encode()


SCHEMA = {"zip": {"type": "numeric"}, "code": {"type": "categorical"}, "day": {"type": "categorical"}}


@pytest.fixture
def dataset(client, owner) -> str:
    r = upload(client, owner, _data(), "b.csv", schema=SCHEMA)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _build(client, owner, ds, column, body):
    return client.post(f"/v1/datasets/{ds}/hierarchies/{column}/build", json=body, headers=auth(owner))


def _read_back(client, owner, ds, column) -> str:
    r = client.get(f"/v1/datasets/{ds}/hierarchies/{column}", headers=auth(owner))
    assert r.status_code == 200, r.text
    return r.text


def _events(client, owner, ds) -> list[dict]:
    return client.get("/v1/audit", headers=auth(owner), params={
        "dataset_id": ds, "action": "dataset.hierarchy_set"}).json()["items"]


def test_redaction_of_a_numeric_zip_column_pads_the_lost_zero_and_masks_from_the_right(client, owner, dataset):
    r = _build(client, owner, dataset, "zip", {"builder": "redaction"})
    assert r.status_code == 200, r.text
    assert r.json() == {"dataset_id": dataset, "column": "zip", "levels": 6, "values": 6, "warnings": []}
    text = _read_back(client, owner, dataset, "zip")
    assert text.splitlines() == [  # leaves as the numeric column holds them; labels padded to 5
        "2139;0213*;021**;02***;0****;*", "2142;0214*;021**;02***;0****;*", "2144;0214*;021**;02***;0****;*",
        "10001;1000*;100**;10***;1****;*", "94110;9411*;941**;94***;9****;*", "94117;9411*;941**;94***;9****;*"]
    # the audit names the stored text by SHA-256, as an upload's does, and the builder
    (event,) = _events(client, owner, dataset)
    assert event["details"] == {"column": "zip", "levels": 6, "builder": "redaction",
                                "sha256": hashlib.sha256(text.encode()).hexdigest()}
    assert client.get(f"/v1/datasets/{dataset}", headers=auth(owner)).json()["hierarchies"] == ["zip"]


def test_redaction_options_left_alignment_and_masking_from_the_left(client, owner, dataset):
    body = {"builder": "redaction", "alignment": "left", "redaction": "left_to_right", "padding": "_", "mask": "#"}
    r = _build(client, owner, dataset, "code", body)
    assert r.status_code == 200, r.text
    rows = _read_back(client, owner, dataset, "code").splitlines()
    assert rows[0] == "02139;#2139;##139;###39;####9;*" and len(rows) == 6


def test_a_build_replaces_an_upload_and_an_upload_replaces_a_build(client, owner, dataset):
    url = f"/v1/datasets/{dataset}/hierarchies/code"
    uploaded = "".join(f"{z};{z[:2]};*\n" for z in ZIPS)
    assert client.put(url, content=uploaded, headers={**auth(owner), "Content-Type": "text/csv"}).status_code == 200
    assert _build(client, owner, dataset, "code", {"builder": "redaction"}).status_code == 200
    built = _read_back(client, owner, dataset, "code")
    assert built.startswith("02139;0213*;021**;02***;0****;*\n")
    # a refused build leaves the one in force, as a refused upload does
    r = _build(client, owner, dataset, "code", {"builder": "date"})
    assert_problem(r, 422, "6 value(s) of the column are not ISO dates", "'02139'")
    assert _read_back(client, owner, dataset, "code") == built
    assert client.put(url, content=uploaded, headers={**auth(owner), "Content-Type": "text/csv"}).status_code == 200
    assert _read_back(client, owner, dataset, "code") == uploaded
    assert [e["details"].get("builder") for e in _events(client, owner, dataset)] == [None, "redaction", None]
    assert client.delete(url, headers=auth(owner)).status_code == 204


def test_date_builder_rows_and_its_refusal_naming_the_values_that_are_no_dates(client, owner, dataset):
    r = _build(client, owner, dataset, "day", {"builder": "date"})
    assert r.status_code == 200, r.text
    assert r.json()["levels"] == 5  # value, month, year, decade, * (no time: no day level)
    rows = _read_back(client, owner, dataset, "day").splitlines()
    assert rows[0] == "2010-01-01;2010-01;2010;[2010, 2019];*"
    assert "2020-11-11;2020-11;2020;[2020, 2029];*" in rows
    r = _build(client, owner, dataset, "day", {"builder": "date", "decade": "mask", "levels": ["year", "decade"]})
    assert _read_back(client, owner, dataset, "day").splitlines()[0] == "2010-01-01;2010;201*;*", r.text
    bad = "day\n" + "".join(f"2021-02-{d:02d}\n" for d in range(25, 30)) + "soon\n2021-2-1\n2021-02-01T25:00\n"
    ds = upload(client, owner, bad.encode(), "d.csv", schema={"day": {"type": "categorical"}}).json()["id"]
    body = assert_problem(_build(client, owner, ds, "day", {"builder": "date"}), 422,
                          "4 value(s) of the column are not ISO dates", "'2021-02-29'", "'2021-2-1'", "'soon'",
                          "'2021-02-01T25:00'")
    assert {e["msg"] for e in body["errors"]} == {f"{v!r} is not an ISO date (YYYY-MM-DD[THH:MM[:SS]])" for v in
                                                  ("2021-02-01T25:00", "2021-02-29", "2021-2-1", "soon")}
    assert client.get(f"/v1/datasets/{ds}/hierarchies/day", headers=auth(owner)).status_code == 404


def test_date_times_get_a_day_level(client, owner):
    data = "t\n" + "".join(f"2021-03-0{1 + i % 3}T{10 + i}:00\n" for i in range(6))
    ds = upload(client, owner, data.encode(), "t.csv", schema={"t": {"type": "categorical"}}).json()["id"]
    assert _build(client, owner, ds, "t", {"builder": "date"}).status_code == 200
    assert _read_back(client, owner, ds, "t").splitlines()[0] == "2021-03-01T10:00;2021-03-01;2021-03;2021;[2020, 2029];*"


def test_intervals_builder_labels_hold_their_values(client, owner, dataset):
    r = _build(client, owner, dataset, "age", {"builder": "intervals", "widths": [5, 10, 20], "lower": 15,
                                               "upper": 75})
    assert r.status_code == 200, r.text
    assert r.json()["warnings"] == []
    text = _read_back(client, owner, dataset, "age")
    rows = text.splitlines()
    assert "18;15-19;15-24;15-34;*" in rows and "37;35-39;35-44;35-54;*" in rows and "75;>=75;>=75;>=75;*" in rows
    frame = parse_arx_hierarchy(text)
    assert interval_label_warnings(frame, value_keys(frame["level_0"], numeric=True)) == []
    # the same frame as the library's builder over the column's values
    ages = pd.read_csv(io.BytesIO(_data()))["age"]
    built = build_hierarchy(IntervalsBuild(builder="intervals", widths=[5, 10, 20], lower=15, upper=75), ages,
                            numeric=True)
    assert to_arx_text(built) == text and frame.equals(built)


def test_groups_builder_refuses_unlisted_values_by_default_or_puts_them_under_the_top(client, owner, dataset):
    levels = [{"Technical": ["Tech-support", "Craft-repair"], "Office": ["Sales", "Exec-managerial"]},
              {"Working": ["Technical", "Office"]}]
    body = assert_problem(_build(client, owner, dataset, "job", {"builder": "groups", "levels": levels}), 422,
                          "1 value(s) of the column are in no group of level 1: 'Priv-house-serv'",
                          "\"unlisted\": \"top\"")
    assert body["errors"] == [{"loc": ["body", "groups", "levels", "0"], "type": "hierarchy_missing_value",
                               "msg": "'Priv-house-serv' is in no group of level 1"}]
    r = _build(client, owner, dataset, "job", {"builder": "groups", "levels": levels, "unlisted": "top"})
    assert r.status_code == 200, r.text
    assert _read_back(client, owner, dataset, "job").splitlines() == [  # the groups' order as listed
        "Craft-repair;Technical;Working;*", "Tech-support;Technical;Working;*",
        "Exec-managerial;Office;Working;*", "Sales;Office;Working;*", "Priv-house-serv;*;*;*"]
    twice = [{"A": ["Sales", "Tech-support"], "B": ["Sales"]}]
    assert_problem(_build(client, owner, dataset, "job", {"builder": "groups", "levels": twice}), 422,
                   "level 1 lists 1 value(s) in two groups: 'Sales' ('A', 'B')")
    unknown = [{"A": JOBS}, {"All": ["A", "Z"]}]
    assert_problem(_build(client, owner, dataset, "job", {"builder": "groups", "levels": unknown}), 422,
                   "level 2 lists 1 name(s) that are no group of level 1: 'Z'")
    # a group named as a value of another row: the upload's own check refuses it
    clash = [{"Sales": ["Sales", "Exec-managerial"], "Other": ["Tech-support", "Craft-repair", "Priv-house-serv"]}]
    assert_problem(_build(client, owner, dataset, "job", {"builder": "groups", "levels": clash}), 422,
                   "group label(s) equal to a data value of another row")


@pytest.mark.parametrize("body, field, fragment", [
    ({"builder": "redaction", "mask": "**"}, "redaction.mask", "one character"),
    ({"builder": "redaction", "padding": ";"}, "redaction.padding", "other than ';'"),
    ({"builder": "redaction", "alignment": "centre"}, "redaction.alignment", "'right' or 'left'"),
    ({"builder": "intervals", "widths": [5, 7]}, "intervals.widths", "no larger multiple of 5"),
    ({"builder": "intervals", "widths": []}, "intervals.widths", "at least 1 item"),
    ({"builder": "intervals", "widths": [5], "lower": 10, "upper": 10}, "intervals", "must be above lower"),
    ({"builder": "intervals", "widths": ["5"]}, "intervals.widths", "must be a number"),
    ({"builder": "date", "levels": ["year", "month"]}, "date.levels", "finest first"),
    ({"builder": "groups", "levels": [{"*": ["Sales"]}]}, "groups.levels", "'*' is the top's name"),
    ({"builder": "groups", "levels": [{"A": []}]}, "groups.levels", "has no members"),
    ({"builder": "groups", "levels": [{"A": ["Sales"]}], "extra": 1}, "groups.extra", "Extra inputs"),
    ({"builder": "zip"}, "request", "tag 'zip' found using 'builder' does not match any of the expected tags: "
                                   "'redaction', 'date', 'intervals', 'groups'"),
])
def test_a_bad_field_is_a_problem_naming_it(client, owner, dataset, body, field, fragment):
    r = _build(client, owner, dataset, "job", body)
    problem = assert_problem(r, 422, fragment)
    assert problem["detail"].startswith(f"{field}"), problem["detail"]


def test_builders_refuse_a_column_of_the_other_type_and_unknown_columns(client, owner, dataset):
    assert_problem(_build(client, owner, dataset, "job", {"builder": "intervals", "widths": [5]}), 422,
                   "intervals builder makes cells of numbers, and this column is categorical")
    assert_problem(_build(client, owner, dataset, "age", {"builder": "date"}), 422, "this column is numeric")
    assert_problem(_build(client, owner, dataset, "nope", {"builder": "redaction"}), 404, "has no column 'nope'")
    r = client.post(f"/v1/datasets/{dataset}/hierarchies/zip/build", content=b"builder=redaction",
                    headers={**auth(owner), "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415, r.text


SPECS = {"zip": RedactionBuild(builder="redaction"), "day": DateBuild(builder="date"),
         "age": IntervalsBuild(builder="intervals", widths=[5, 10, 20, 40]),
         "job": GroupsBuild(builder="groups", unlisted="top",  # Priv-house-serv goes under '*'
                            levels=[{"Technical": ["Tech-support", "Craft-repair"], "Office": ["Sales", "Exec-managerial"]}])}


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_kanonymity_generalizes_along_each_built_hierarchy(client, owner, dataset, algorithm):
    for column, spec in SPECS.items():
        r = _build(client, owner, dataset, column, spec.model_dump(exclude_none=True))
        assert r.status_code == 200, r.text
    qis = list(SPECS)
    params = {"k": 5, "algorithm": algorithm, "quasi_identifiers": qis}
    if algorithm == "mondrian":
        params["numeric_generalization"] = "hierarchy"
    job = submit(client, owner, "kanonymity", params, dataset_id=dataset).json()
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    rid = done["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    assert sorted(release["metadata"]["uploaded_hierarchies"]) == sorted(qis)
    data = pd.read_csv(io.BytesIO(client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content), dtype=str)
    assert len(data) == ROWS
    assert data.groupby(qis).size().min() >= 5
    # released labels are the built hierarchies' nodes
    for column in qis:
        labels = set(parse_arx_hierarchy(_read_back(client, owner, dataset, column)).to_numpy().ravel().tolist())
        assert set(data[column]) <= labels, (column, set(data[column]) - labels)


def test_a_built_hierarchy_larger_than_an_upload_may_be_is_refused(client, owner, dataset, monkeypatch):
    """A build stores what an upload could have sent: its ARX text is held to
    VEIL_MAX_HIERARCHY_BYTES as an uploaded file is (a 10^6-code hierarchy is ~44 MB, and every
    job along it parses it when it starts)."""
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "max_hierarchy_bytes", 100)
    assert_problem(_build(client, owner, dataset, "zip", {"builder": "redaction"}), 422,
                   "the built hierarchy is 189 bytes of ARX text, above the limit of 100 bytes an uploaded one "
                   "may have (VEIL_MAX_HIERARCHY_BYTES)")
    assert client.get(f"/v1/datasets/{dataset}/hierarchies/zip", headers=auth(owner)).status_code == 404


def test_a_group_name_with_a_control_character_is_a_problem_not_a_server_error(client, owner, dataset):
    """A NUL cannot be stored in PostgreSQL's text (the schema fuzzer's kind of input)."""
    for name in ("A\x00", "A\tB"):
        r = _build(client, owner, dataset, "job", {"builder": "groups", "unlisted": "top",
                                                    "levels": [{name: ["Sales"]}]})
        assert_problem(r, 422, "groups.levels: Value error, level 1: group", "control character")
