"""The reports list's `kind` filter derives from the registry: an analysis whose reports carry
another kind (reconstruct's say "reconstruction") says so in its spec (report_kind), and a
method registered as a plugin gets the same filter without an edit to the reports module."""

from __future__ import annotations

import pytest

from app.privacy import registry
from app.privacy.results import ReportResult
from app.reports.service import known_kind


class _NoParams(registry.Params):
    pass


@pytest.fixture
def plugin_analysis():
    spec = registry.register(registry.MethodSpec(
        name="test_plugin_analysis", family="diagnostics", kind=registry.MethodKind.analysis, summary="test",
        params=_NoParams, guarantee="none", paper="none", report_kind="test_plugin_report",
        run=lambda data, params, ctx: ReportResult(kind="test_plugin_report", data={})))
    yield spec
    registry._REGISTRY.pop(spec.name)


def test_the_kind_filter_takes_the_analysis_name_or_its_report_kind(plugin_analysis):
    assert known_kind("reconstruct") == known_kind("reconstruction") == "reconstruction"
    assert known_kind("risk") == "risk"
    assert known_kind("test_plugin_analysis") == known_kind("test_plugin_report") == "test_plugin_report"
    for wrong in ("rsik", "errph"):  # a typo, a release method: no report has that kind
        with pytest.raises(ValueError, match="unknown report kind"):
            known_kind(wrong)


def test_a_report_of_another_kind_than_its_spec_says_is_refused_when_stored(plugin_analysis):
    """The list's filter trusts the spec: a method whose reports carried another kind would
    store reports no `?kind=` could find."""
    from app.worker.child import encode

    job = {"method": plugin_analysis.name}
    assert encode(ReportResult(kind="test_plugin_report", data={}), job)["report_kind"] == "test_plugin_report"
    with pytest.raises(TypeError, match="report_kind"):
        encode(ReportResult(kind="test_plugin_analysis", data={}), job)
