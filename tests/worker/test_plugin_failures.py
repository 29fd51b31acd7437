"""What a plugin method's author reads when the method breaks Veil's contract (plugin acceptance
sweep). The checks' own messages name the method and what to change and hold no data value,
yet the job said only 'the method failed (TypeError at child.py:144)' or '… at guarantees.py:56'
— the message was shown nowhere, not even in the worker's log. A method that calls sys.exit was
taken for a crashed process and run three times; one that ran without reporting a stage was
'stopped at 'loading the input'' by its time or memory limit, its input long loaded. A price
that is no ε was debited as it came: -5 gave the budget 5 back, NaN made its dataset answer 500
for good. The attempts run in this process (runner.execute)."""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import uuid

import pandas as pd
import pytest

from app import codec
from app.privacy import registry
from app.privacy.data import ColumnInfo
from app.privacy.guarantees import guarantee
from app.privacy.results import ReleaseResult, ReportResult
from app.privacy.rng import SecureRandom
from app.worker import child, runner
from tests.support.api import auth, submit, upload

DATA = b"a,b\n1,x\n2,y\n3,x\n"


def _run(client, owner, method: str, params: dict | None = None) -> dict:
    ds = upload(client, owner, DATA, "p.csv").json()
    job = submit(client, owner, method, params or {}, dataset_id=ds["id"]).json()
    runner.execute(uuid.UUID(job["id"]))
    return client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()


def test_a_release_without_the_common_keys_says_which_in_the_jobs_error(client, owner):
    done = _run(client, owner, "diag_bare_guarantees")
    assert done["status"] == "failed" and done["error"]["type"] == "internal", done
    message = done["error"]["message"]
    assert "diag_bare_guarantees" in message and "app.privacy.guarantees.guarantee" in message, message
    assert "private" in message and "random_source" in message, message  # the keys it lacks


def test_a_method_that_calls_sys_exit_fails_once_naming_it(client, owner):
    done = _run(client, owner, "diag_exit")
    assert done["status"] == "failed" and done["attempt"] == 1, done
    assert done["error"]["type"] == "internal" and "SystemExit" in done["error"]["message"], done


def _release_job(method: str) -> dict:
    return {"method": method, "columns": [{"name": "a", "type": "numeric"}], "source": None}


@pytest.mark.parametrize("result, says", [
    ({"frame": None}, "returned dict"),
    (None, "returned NoneType"),
])
def test_a_result_that_is_no_result_object_says_what_it_was(result, says):
    with pytest.raises(registry.MethodContractError, match=says) as caught:
        child.encode(result, _release_job("diag_sleep"))
    assert "diag_sleep" in str(caught.value) and "ReleaseResult" in str(caught.value)


def test_a_result_of_another_kind_than_the_method_is_refused():
    """An analysis that returned a ReleaseResult published a release from an analyst's job,
    with no ε debited (an analysis is priced at none)."""
    release = ReleaseResult(frame=pd.DataFrame({"a": [1]}),
                            guarantees=guarantee("none", rng="test", private=False))
    with pytest.raises(registry.MethodContractError, match="analysis") as caught:
        child.encode(release, _release_job("risk"))
    assert "'risk'" in str(caught.value) and "ReportResult" in str(caught.value)
    with pytest.raises(registry.MethodContractError, match="release"):
        child.encode(ReportResult(kind="diag_sleep", data={}), _release_job("diag_sleep"))


def test_a_method_reporting_no_stage_runs_at_running_not_at_loading(tmp_path):
    """The limits name the stage a job was stopped at: after the input is read it is the method's."""
    path = tmp_path / "input.parquet"
    path.write_bytes(codec.table_to_parquet(pd.DataFrame({"a": ["x", "y"]})))
    columns = [ColumnInfo("a", "categorical")]
    job = {"method": "diag_bare_guarantees", "params": {}, "input_path": str(path), "shape": "table",
           "column_infos": [dataclasses.asdict(c) for c in columns], "columns": [{"name": "a", "type": "categorical"}],
           "hierarchies": {}, "source": None}
    stages: queue.Queue = queue.Queue()
    with pytest.raises(registry.MethodContractError):  # its guarantees; the stages came before
        child._run(job, SecureRandom(seed=1), stages, threading.Event())
    reported = [stages.get() for _ in range(stages.qsize())]
    assert reported == [(0.0, "loading the input"), (0.0, "running"), (1.0, "storing the result")], reported


@pytest.mark.parametrize("price", [-5.0, float("nan")])
def test_a_price_that_is_no_epsilon_is_refused_before_any_debit(client, owner, monkeypatch, caplog, price):
    ds = upload(client, owner, DATA, "priced.csv").json()
    spec = registry.get("diag_dp_hog")
    monkeypatch.setitem(registry._REGISTRY, "diag_dp_hog",
                        dataclasses.replace(spec, epsilon=lambda params, columns: price))
    with caplog.at_level(logging.ERROR, logger="veil.api"):
        r = submit(client, owner, "diag_dp_hog", {"epsilon": 1.0}, dataset_id=ds["id"])
    assert r.status_code == 500, r.text
    logged = [rec.getMessage() for rec in caplog.records if rec.name == "veil.api"]
    assert any("diag_dp_hog" in m and "MethodSpec.epsilon" in m for m in logged), logged
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner))
    assert budget.status_code == 200 and budget.json()["epsilon_spent"] == 0 and budget.json()["entries"] == []
    assert client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).status_code == 200
    assert client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"] == []
