"""Bad inputs of the anonymity, feature-selection, TRR and itemset methods are refused when the
job is submitted (422 naming the problem, or 409 when an infinite ε meets a budget), before any
ε is debited and without an internal error: the bad-input sweep's F5-F8 and F12."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, submit, upload

TABLE = b"sex,age,y\nM,30,a\nF,41,a\nM,52,a\nF,23,a\n"
SCHEMA = {"y": {"role": "label"}}


def _dataset(client, owner):
    r = upload(client, owner, TABLE, "inputs.csv", schema=SCHEMA)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_mask_publishing_raw_rows_needs_the_opt_in_and_an_infinite_epsilon(client, owner):
    ds = _dataset(client, owner)
    assert_problem(submit(client, owner, "mask", {"p": 1, "columns": ["sex"]}, dataset_id=ds),
                   422, "allow_zero_probabilities")
    raw = {"p": 1, "columns": ["sex"], "allow_zero_probabilities": True}
    client.put(f"/v1/datasets/{ds}/budget", headers=auth(owner), json={"epsilon_total": 1.0})
    assert_problem(submit(client, owner, "mask", raw, dataset_id=ds), 409,
                   "needs ε = Infinity (a step of it has no finite privacy bound) but only 1 of")
    budget = client.get(f"/v1/datasets/{ds}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == 0  # nothing was debited
    uncapped = _dataset(client, owner)
    r = submit(client, owner, "mask", raw, dataset_id=uncapped)
    assert r.status_code == 202 and r.json()["epsilon"] == "Infinity"


def test_single_class_label_and_trr_overflow_are_refused_at_submit(client, owner):
    ds = _dataset(client, owner)
    for method in ("rfk_anonymity", "rfka"):
        assert_problem(submit(client, owner, method, {}, dataset_id=ds), 422,
                       "label column 'y' has a single class")
    body = assert_problem(submit(client, owner, "trr", {"a_mean": 1e308, "b_mean": -1e308},
                                 dataset_id=ds), 422, "a_mean must be a finite number")
    assert body["errors"][0]["loc"][-1] == "a_mean"


def test_hierarchy_with_a_repeated_row_or_an_overlong_cell_is_refused(client, owner):
    ds = _dataset(client, owner)
    url = f"/v1/datasets/{ds}/hierarchies/sex"
    assert_problem(client.put(url, headers=auth(owner), content="M;*\nF;*\nM;*\n"), 422,
                   "line 3 repeats line 1")
    assert_problem(client.put(url, headers=auth(owner), content="M;*\nF;" + "x" * 100_000 + "\n"),
                   422, "longer than 65536 characters")
    assert client.put(url, headers=auth(owner), content="M;*\nF;*\n").status_code == 200


def test_a_transaction_file_too_large_to_randomize_is_refused_at_submit(client, owner):
    """Every absent item is flipped too: 40,000 transactions of one distinct item each are 1.6e9
    cells. The job failed after reading the file; the schema's item count decides at submission."""
    body = b"".join(f"i{n}\n".encode() for n in range(40_000))
    ds = upload(client, owner, body, "wide.dat").json()
    assert ds["shape"] == "transactions" and ds["rows"] == 40_000
    for method, params in (("mask", {"p": 0.9}), ("png", {"ps": [0.9, 0.8]})):
        assert_problem(submit(client, owner, method, params, dataset_id=ds["id"]), 422,
                       "40000 transactions × 40000 items exceed the limit of 1000000000")
    # restricted to fewer items it fits: accepted
    for params in ({"p": 0.9, "top_items": 1000}, {"p": 0.9, "items": ["i1", "i2"]}):
        r = submit(client, owner, "mask", params, dataset_id=ds["id"])
        assert r.status_code == 202, r.text


def test_a_table_without_a_column_to_encode_into_items_is_refused_at_submission(client, owner):
    """COIL 2000's coded attributes are numeric: mask and frequent_itemsets with their default
    columns were accepted and their jobs failed 'no column to encode into items' (coilbank
    acceptance check), where errph and warner refuse at submission."""
    r = upload(client, owner, b"a,b\n1,2\n3,4\n5,6\n", "numbers.csv")
    ds = r.json()["id"]
    for method, params in (("mask", {"p": 0.9}), ("png", {"ps": [0.9, 0.8]}), ("frequent_itemsets", {})):
        assert_problem(submit(client, owner, method, params, dataset_id=ds), 422,
                       "no column to encode into items", "name them in 'columns'")
