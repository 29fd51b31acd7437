"""CSV downloads opened in a spreadsheet run a cell such as =HYPERLINK(…) as a formula (CSV
injection). `spreadsheet_safe=true` escapes such text cells with a leading apostrophe; the
default stays faithful to the data (security acceptance check)."""

from __future__ import annotations

import csv
import io

from app.worker import runner
from tests.support.api import assert_problem, auth, submit, upload

DATA = (b'name,n,note\n"=HYPERLINK(""http://x"",""y"")",-3,plain\n+1 555,4,@sum\n'
        b'-dash,5,"\ttab"\nok,-1.5,\n')


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))  # the spreadsheet file's BOM


def test_dataset_csv_escapes_formula_cells_only_when_asked(client, owner):
    ds = upload(client, owner, DATA, "f.csv").json()
    url = f"/v1/datasets/{ds['id']}/data"
    plain = client.get(url, headers=auth(owner))
    safe = client.get(url, headers=auth(owner), params={"spreadsheet_safe": "true"})
    # a UTF-8 byte-order mark, so that Excel reads the text as UTF-8: the spreadsheet's file only
    assert safe.content.startswith(b"\xef\xbb\xbf\"name\"") and plain.content.startswith(b'"name"')
    plain, safe = _rows(plain.text), _rows(safe.text)
    assert plain[1][0] == '=HYPERLINK("http://x","y")' and plain[2][2] == "@sum"
    assert [r[0] for r in safe[1:]] == ["'=HYPERLINK(\"http://x\",\"y\")", "'+1 555", "'-dash", "ok"]
    assert [r[2] for r in safe[1:]] == ["plain", "'@sum", "'\ttab", ""]
    assert [r[1] for r in safe[1:]] == [r[1] for r in plain[1:]] == ["-3", "4", "5", "-1.5"]  # numbers as they are
    assert_problem(client.get(url, headers=auth(owner), params={"format": "jsonl", "spreadsheet_safe": "true"}),
                   422, "spreadsheet_safe applies to format=csv only")
    events = client.get("/v1/audit", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"]
    details = [e["details"] for e in events if e["action"] == "dataset.downloaded"]
    assert {"format": "csv", "spreadsheet_safe": True} in details and {"format": "csv"} in details


def test_release_csv_escapes_formula_cells_when_asked(client, owner):
    ds = upload(client, owner, DATA, "f.csv").json()
    job = submit(client, owner, "kanonymity", {"k": 2, "quasi_identifiers": ["n"]}, dataset_id=ds["id"])
    runner.execute(job.json()["id"])
    done = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    url = f"/v1/releases/{done['result']['release_ids'][0]}/data"
    safe = _rows(client.get(url, headers=auth(owner), params={"spreadsheet_safe": "true"}).text)
    names = [r[safe[0].index("name")] for r in safe[1:]]
    assert sorted(names) == sorted(["'=HYPERLINK(\"http://x\",\"y\")", "'+1 555", "'-dash", "ok"])
