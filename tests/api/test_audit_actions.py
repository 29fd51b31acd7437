"""The audit list's `action` filter takes the actions events carry, and names a typo (acceptance
check, dashboard): `?action=dataset.download` answered an empty page, as if nothing had been
downloaded."""

from __future__ import annotations

import re
from pathlib import Path

from app.audit.schemas import ACTIONS
from tests.support.api import assert_problem, auth, upload

APP = Path(__file__).resolve().parents[2] / "app"


def test_the_known_actions_are_the_ones_the_code_records():
    literal = re.compile(r"\"((?:budget|dataset|job|key|model|release|report|service)\.[a-z_]+)\"")
    recorded = {m for path in APP.rglob("*.py") if path.name != "schemas.py" or path.parent.name != "audit"
                for m in literal.findall(path.read_text())}
    assert recorded == ACTIONS


def test_an_unknown_action_is_named_and_a_known_one_filters(client, make_key):
    key = make_key("owner")
    upload(client, key, b"a,b\n1,x\n2,y\n", "actions.csv")
    assert_problem(client.get("/v1/audit", headers=auth(key), params={"action": "dataset.download"}), 422,
                   "unknown action 'dataset.download'", "dataset.downloaded")
    items = client.get("/v1/audit", headers=auth(key), params={"action": "dataset.uploaded"}).json()["items"]
    assert [e["action"] for e in items] == ["dataset.uploaded"]
