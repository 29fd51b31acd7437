"""Which sensitive columns a kanonymity job reads: the schema's declared ones when none is given,
and a column no model asked reads is not checked."""

from __future__ import annotations

import pandas as pd
import pytest

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.roles import resolve_sensitive
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError


def test_several_declared_sensitive_columns_are_all_read():
    """The schema declares two sensitive columns and the job names none: both are read (every model
    holds on each), not a 422 asking to choose; an explicit column still chooses one."""
    columns = [ColumnInfo("g", "categorical", "quasi_identifier"), ColumnInfo("s", "categorical", "sensitive"),
               ColumnInfo("u", "categorical", "sensitive")]
    assert resolve_sensitive(columns, None, ["g"], needed=True) == ["s", "u"]
    assert resolve_sensitive(columns, "u", ["g"], needed=True) == "u"
    assert resolve_sensitive(columns, None, ["g"], needed=False) is None
    many = [ColumnInfo("g", "categorical", "quasi_identifier")] + [
        ColumnInfo(f"s{i}", "categorical", "sensitive") for i in range(9)]
    with pytest.raises(MethodInputError, match=r"9 columns are declared sensitive \(s0, .*s8\), more than the 8"):
        resolve_sensitive(many, None, ["g"], needed=True)


def test_k_alone_does_not_read_a_sensitive_column():
    """k-anonymity alone reads no sensitive column: a numeric one with missing cells (which the
    ordered distance refuses) is no reason to refuse the job, alone or in a list."""
    frame = pd.DataFrame({"g": ["x", "x", "y", "y"], "u": [1.0, None, 2.0, 3.0], "s": ["a", "b", "a", "b"]})
    infos = {"g": ColumnInfo("g", "categorical", "quasi_identifier"), "u": ColumnInfo("u", "numeric", "sensitive"),
             "s": ColumnInfo("s", "categorical", "sensitive")}
    for sensitive in ("u", ["s", "u"]):
        result = anonymize(frame, infos, {}, ["g"], Constraints(k=2), sensitive, Options())
        assert result.achieved.k == 2 and len(result.frame) == 4
    with pytest.raises(MethodInputError, match="numeric sensitive column 'u' has missing cells"):
        anonymize(frame, infos, {}, ["g"], Constraints(k=2, t=0.5), ["s", "u"], Options())
