"""ε lost to a restore is written into the ledger (`veil ledger debit`, a `reconciliation`
entry): after a restore from an older backup every ε spent after the backup is missing from the
ledger, and lowering a cap (the only way before) left the ledger without those debits and could
not reconcile a dataset without a cap (docs/reliability.md, "Backup and restore")."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from app import cli
from app.budgets import cli as ledger_cli
from app.db import transaction
from tests.api.test_restore_check import TENANT, _restored_state, _scratch
from tests.support.api import auth, upload


def _ledger_debit(*argv: str) -> None:
    args = cli.build_parser().parse_args(["ledger", "debit", *argv])
    args.fn(args)


def test_a_reconciliation_is_written_while_a_restore_awaits_and_counts_like_a_debit(database):
    from app.audit.repository import list_events
    from app.budgets import repository
    from app.budgets import service as budgets
    from app.errors import BudgetExhausted, Conflict
    from app.ops import restore

    with _scratch(database) as engine:
        dataset, _queued = _restored_state(engine)  # cap 10, 2 spent
        with Session(engine) as s, s.begin():
            assert restore.check(s) is not None
        lost = uuid.uuid4()
        with Session(engine) as s, s.begin():  # allowed while the restore awaits acceptance
            done = budgets.reconcile(s, dataset_id=dataset, epsilon=7.5, job_id=lost, actor="cli",
                                     note="job lost after the backup, from the follower's copy")
            assert done["epsilon_spent"] == 9.5 and done["epsilon_remaining"] == 0.5
            budgets.reconcile(s, dataset_id=dataset, epsilon=1.25, job_id=None, actor="cli",
                              note="a release a tenant received; its job is unknown")
        with Session(engine) as s:
            view = budgets.view(s, dataset)
            assert view["epsilon_spent"] == 10.75 and view["epsilon_remaining"] == 0.0  # past the cap
            last = view["entries"][-2:]
            assert [(e["kind"], e["job_id"], e["method"], e["actor"], e["epsilon"]) for e in last] == [
                ("reconciliation", lost, None, "cli", 7.5), ("reconciliation", None, None, "cli", 1.25)]
            assert last[0]["note"] == "job lost after the backup, from the follower's copy"
            trail = list_events(s, tenant=TENANT, dataset_id=dataset, release_id=None, actor=None,
                                action="budget.reconciled", since=None, until=None, after=None,
                                limit=10, settled=False)
            assert [(e["actor"], e["details"]["epsilon"], e["details"]["job_id"]) for e in trail] == [
                ("cli", 7.5, str(lost)), ("cli", 1.25, None)]
        with Session(engine) as s, s.begin():  # the sum of what the ledger holds keeps them
            repository.recompute_spent(s, dataset)
            assert float(repository.get(s, dataset)["epsilon_spent"]) == 10.75
        with Session(engine) as s, s.begin(), pytest.raises(Conflict, match="restored from a backup"):
            budgets.debit(s, dataset_id=dataset, job_id=uuid.uuid4(), method="errph", epsilon=0.1,
                          actor=dataset)  # a reconciliation does not lift the freeze
        with Session(engine) as s, s.begin():
            restore.accept(s, actor="test")
        with Session(engine) as s, s.begin(), pytest.raises(
                BudgetExhausted, match=r"^the job needs ε = 0.1 but nothing of the dataset's budget remains "
                r"\(total 10, spent 10.75: past it by ε written into the ledger by `veil ledger debit`\)$"):
            budgets.debit(s, dataset_id=dataset, job_id=uuid.uuid4(), method="errph", epsilon=0.1,
                          actor=dataset)  # nothing remains under the cap until it is raised
        with Session(engine) as s, s.begin(), pytest.raises(Conflict, match="already holds"):
            budgets.reconcile(s, dataset_id=dataset, epsilon=7.5, job_id=lost, actor="cli", note="again")
        with Session(engine) as s, s.begin(), pytest.raises(Conflict, match="already holds"):
            budgets.reconcile(s, dataset_id=dataset, epsilon=2, job_id=_queued, actor="cli",
                              note="the job failed `restored` keeps its debit")


@pytest.mark.parametrize("argv, says", [
    (["--dataset", "nope", "--epsilon", "1", "--note", "n"], "--dataset: not a dataset id: 'nope'"),
    (["--dataset", str(uuid.uuid4()), "--epsilon", "1", "--note", "n"], "no dataset"),
    (["--epsilon", "-1", "--note", "n"], "--epsilon: must be a finite number more than 0, not '-1'"),
    (["--epsilon", "0", "--note", "n"], "--epsilon: must be a finite number more than 0, not '0'"),
    (["--epsilon", "nan", "--note", "n"], "--epsilon: must be a finite number more than 0, not 'nan'"),
    (["--epsilon", "inf", "--note", "n"], "--epsilon: must be a finite number more than 0, not 'inf'"),
    (["--epsilon", "1e400", "--note", "n"], "--epsilon: must be a finite number more than 0, not '1e400'"),
    (["--epsilon", "x", "--note", "n"], "--epsilon: must be a finite number more than 0, not 'x'"),
    (["--epsilon", "1", "--note", "  "], "--note: say what was lost and how it is known"),
    (["--epsilon", "1", "--note", "n", "--job", "j1"], "--job: not a job id: 'j1'"),
])
def test_a_bad_argument_is_refused_in_one_line_and_writes_nothing(client, owner, monkeypatch, capsys,
                                                                   argv, says):
    ds = upload(client, owner, b"b\nx\ny\n", "ledger.csv").json()
    if "--dataset" not in argv:
        argv = ["--dataset", ds["id"], *argv]
    monkeypatch.setattr(ledger_cli, "database_ready", lambda owner=False: None)
    with pytest.raises(SystemExit) as stopped:
        _ledger_debit(*argv)
    assert str(stopped.value).startswith("veil ledger debit: ") and says in str(stopped.value), stopped.value
    assert "\n" not in str(stopped.value)
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entries"] == []


def test_the_cli_writes_a_reconciliation_the_budget_shows_without_a_cap(client, owner, monkeypatch, capsys):
    ds = upload(client, owner, b"b\nx\ny\n", "ledger.csv").json()
    monkeypatch.setattr(ledger_cli, "database_ready", lambda owner=False: None)
    lost = uuid.uuid4()
    _ledger_debit("--dataset", ds["id"], "--epsilon", "0.75", "--job", str(lost),
                  "--note", "lost after the restore of 28 Nov; follower copy, position 12.40")
    said = capsys.readouterr().out
    assert "ε = 0.75" in said and "spent 0.75" in said and "no cap" in said, said
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == 0.75 and budget["epsilon_total"] is None
    [entry] = budget["entries"]
    assert entry["kind"] == "reconciliation" and entry["job_id"] == str(lost) and entry["actor"] == "cli"
    assert entry["note"] == "lost after the restore of 28 Nov; follower copy, position 12.40"
    assert entry["method"] is None and entry["epsilon"] == 0.75
    page = client.get(f"/v1/datasets/{ds['id']}/budget/entries", headers=auth(owner)).json()
    assert [e["kind"] for e in page["items"]] == ["reconciliation"]
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"action": "budget.reconciled", "dataset_id": ds["id"]}).json()["items"]
    assert [(e["actor"], e["details"]["epsilon"], e["details"]["note"]) for e in events] == [
        ("cli", 0.75, entry["note"])]
    # past a cap set later: the cap cannot go below it, and nothing remains under it
    over = client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 0.5})
    assert over.status_code == 409
    _ledger_debit("--dataset", ds["id"], "--epsilon", "1", "--note", "one more")
    with transaction() as session:
        spent = session.execute(text("SELECT epsilon_spent FROM budgets WHERE dataset_id = :d"),
                                {"d": ds["id"]}).scalar()
    assert float(spent) == 1.75
