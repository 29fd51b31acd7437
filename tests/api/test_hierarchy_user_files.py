"""Hierarchies as ARX users bring them, through PUT /v1/datasets/{id}/hierarchies/{column}
(the hierarchy acceptance sweep): what is accepted, what is warned about, what is refused and
how each answer names the problem; and a later schema change that the hierarchy no longer fits."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, upload


def _put(client, owner, dataset_id, column, text):
    return client.put(f"/v1/datasets/{dataset_id}/hierarchies/{column}",
                      headers={**auth(owner), "Content-Type": "text/csv"}, content=text.encode())


def test_arx_age_hierarchy_uploads_with_a_warning_naming_labels_that_do_not_hold_their_values(
        client, owner, adult_path):
    """ARX's Adult age hierarchy puts 20 under '15-19' and 40 under '35-39': a release shows those
    labels as written, and its reader is misled. Uploaded, it is kept (labels are the user's
    words) and the answer warns, naming the first values and labels."""
    ds = upload(client, owner, adult_path, "adult.csv").json()
    r = _put(client, owner, ds["id"], "age", (adult_path.parent / "hierarchies" / "age.csv").read_text())
    assert r.status_code == 200, r.text
    (warning,) = r.json()["warnings"]
    assert warning.startswith("15 of the data's values lie outside an interval label above them in the "
                              "hierarchy (20 of its 100 values): 20 under '15-19', '10-19' and '0-19'; "
                              "25 under '20-24'")
    # a categorical column's labels are not read as intervals; a clean upload warns of nothing
    r = _put(client, owner, ds["id"], "race", (adult_path.parent / "hierarchies" / "race.csv").read_text())
    assert r.status_code == 200 and r.json()["warnings"] == []


def test_a_comma_separated_hierarchy_is_read_and_a_numeric_columns_leaves_match_as_numbers(client, owner):
    csv = "zip,sex\n" + "".join(f"0{z},{'MF'[z % 2]}\n" for z in range(1700, 1720))  # read as numbers
    ds = upload(client, owner, csv.encode(), "zips.csv").json()
    assert {c["name"]: c["type"] for c in ds["columns"]}["zip"] == "numeric"
    zips = "".join(f"0{z};0{z // 10}*;*\n" for z in range(1700, 1720))
    r = _put(client, owner, ds["id"], "zip", zips)  # '01700' was 'missing' though listed
    assert r.status_code == 200, r.text
    assert r.json() == {"dataset_id": ds["id"], "column": "zip", "levels": 3, "values": 20, "warnings": []}
    r = _put(client, owner, ds["id"], "sex", "M,*\nF,*\n")
    assert r.status_code == 200, r.text
    r = _put(client, owner, ds["id"], "sex", "level_0,level_1\nM,*\nF,*\n")  # pandas' header row
    assert r.status_code == 200 and r.json()["warnings"] == [
        "the hierarchy's last level holds 2 values ('*', 'level_1'), not one: a root '*' is added above "
        "them; the first row ('level_0', 'level_1') holds no value of the data and shares no label with "
        "another row: if it is a header, remove it"]
    r = _put(client, owner, ds["id"], "sex", "m;*\nF;*\n")
    body = assert_problem(r, 422, "1 data value(s) missing from the hierarchy: 'M'; 1 of them are written "
                                  "otherwise in the hierarchy (values match as written, case and leading "
                                  "zeros included): 'M' as 'm'")
    assert body["errors"][0]["msg"] == ("data value 'M' is missing from the hierarchy (it has 'm': values "
                                        "match as written, case and leading zeros included)")


def test_a_leaf_a_numeric_column_cannot_hold_is_named_and_ignored(client, owner):
    """An age hierarchy with a row for 'unknown' was accepted silently, and every job that
    generalized along it failed naming no leaf."""
    ds = upload(client, owner, b"age\n" + b"".join(b"%d\n" % a for a in range(20, 40)), "ages.csv").json()
    hier = "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(20, 40)) + "unknown;unknown;*\n"
    r = _put(client, owner, ds["id"], "age", hier)
    assert r.status_code == 200, r.text
    assert r.json()["warnings"] == ["1 leaf value(s) of the hierarchy are not numbers, and column 'age' is "
                                    "numeric, so no value of it can be one: 'unknown'; they are ignored"]


def test_a_schema_change_the_hierarchy_no_longer_fits_is_refused_naming_it(client, owner):
    """A numeric column's hierarchy writes 7 as '07' (matched as a number). Re-coded as
    categorical, its values are the text '7' and the hierarchy would miss them: the change was
    accepted and every job along the hierarchy failed later. Now it is refused, and the schema
    and hierarchy stay as they were."""
    ds = upload(client, owner, b"code\n" + b"7\n8\n" * 5, "codes.csv").json()
    assert _put(client, owner, ds["id"], "code", "07;low;*\n08;low;*\n").status_code == 200
    url = f"/v1/datasets/{ds['id']}/schema"
    r = client.put(url, headers=auth(owner), json={"code": {"type": "categorical"}})
    body = assert_problem(r, 422, "column 'code' has a hierarchy that would not fit its values as "
                                  "categorical: 2 data value(s) missing from the hierarchy: '7', '8'",
                          "DELETE /v1/datasets/")
    assert body["errors"][0]["type"] == "hierarchy_missing_value"
    now = client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()
    assert now["hierarchies"] == ["code"]
    assert client.get(f"/v1/datasets/{ds['id']}/profile", headers=auth(owner)).json()["columns"][0]["type"] \
        == "numeric"
    # one that fits both ways ('7' matches the number and the text) lets the change through
    assert _put(client, owner, ds["id"], "code", "7;low;*\n8;low;*\n").status_code == 200
    r = client.put(url, headers=auth(owner), json={"code": {"type": "categorical"}})
    assert r.status_code == 200, r.text
    # and back to numeric: the hierarchy's text leaves match as numbers again
    r = client.put(url, headers=auth(owner), json={"code": {"type": "numeric"}})
    assert r.status_code == 200, r.text
