"""A report computed from a raw dataset (an analysis run on `dataset_id`: risk's class sizes,
frequent_itemsets' exact supports) describes the raw data with no ε: like the dataset itself,
its profile and a raw-data job's failure message, it is for the tenant's owners only. Analysts
read the reports made from releases (post-processing) and experiments (public data). Found by
the authorization sweep: an analyst read the exact itemset supports of a raw transaction file."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, run_job, submit, upload

TABLE = ("age,sex,edu\n" + "".join(f"{20 + i % 40},{'MF'[i % 2]},{('hs', 'ba', 'ms')[i % 3]}\n"
                                   for i in range(90))).encode()


def _done(client, key, method, params, **source) -> dict:
    r = submit(client, key, method, params, **source)
    assert r.status_code == 202, r.text
    return run_job(client, key, r.json()["id"])


def test_analysts_do_not_read_reports_computed_from_the_raw_dataset(client, make_key):
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    ds = upload(client, owner, TABLE, "t.csv").json()
    tx = upload(client, owner, b"1 2 3\n2 3\n1 3 4\n2 4\n1 2 4\n" * 4, "t.dat").json()
    on_raw = {
        "risk": _done(client, owner, "risk", {"quasi_identifiers": ["age", "sex"]}, dataset_id=ds["id"]),
        "frequent_itemsets": _done(client, owner, "frequent_itemsets", {"minsup": 0.05}, dataset_id=tx["id"]),
    }
    release = _done(client, owner, "errph", {"p0": 0.5, "columns": ["sex", "edu"]}, dataset_id=ds["id"])
    on_release = _done(client, analyst, "risk", {"quasi_identifiers": ["sex", "edu"]},
                       release_id=release["result"]["release_ids"][0])

    for name, job in on_raw.items():
        report = job["result"]["report_id"]
        own = client.get(f"/v1/reports/{report}", headers=auth(owner))
        assert own.status_code == 200 and own.json()["data"], name  # owners hold the data anyway
        assert_problem(client.get(f"/v1/reports/{report}", headers=auth(analyst)), 403, "raw dataset")
        for plot, files in own.json()["plots"].items():
            for fmt in files:
                path = f"/v1/reports/{report}/plots/{plot}.{fmt}"
                assert client.get(path, headers=auth(owner)).status_code == 200
                assert_problem(client.get(path, headers=auth(analyst)), 403, "raw dataset")
    # the risk report has a plot: the check above covered one
    assert client.get(f"/v1/reports/{on_raw['risk']['result']['report_id']}", headers=auth(owner)).json()["plots"]

    # what a release shows stays readable, and the analyst's list holds only what it may read
    mine = on_release["result"]["report_id"]
    got = client.get(f"/v1/reports/{mine}", headers=auth(analyst))
    assert got.status_code == 200 and got.json()["release_id"] == release["result"]["release_ids"][0]
    listed = {r["id"] for r in client.get("/v1/reports", headers=auth(analyst), params={"limit": 200}).json()["items"]}
    raw_ids = {job["result"]["report_id"] for job in on_raw.values()}
    assert mine in listed and not listed & raw_ids
    by_dataset = client.get("/v1/reports", headers=auth(analyst), params={"dataset_id": ds["id"]}).json()["items"]
    assert [r["id"] for r in by_dataset] == [mine]
    owners = {r["id"] for r in client.get("/v1/reports", headers=auth(owner), params={"limit": 200}).json()["items"]}
    assert raw_ids | {mine} <= owners

