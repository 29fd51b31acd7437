"""The registry's per-method hooks: a randomizer registered outside app.privacy (as a plugin
would be) is read back by the chain code without any edit to it."""

from __future__ import annotations

import numpy as np
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.itemsets.release import PngParams
from app.privacy.itemsets.supports import reconstruct_step
from app.privacy.reconstruction import ReconstructParams
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import CategoricalChannel, Opaque, chain_channels, step_channels
from tests.privacy.test_itemsets_release import csr_of, run

PLUGIN = "test_plugin"


def _plugin_channels(metadata):
    return {name: CategoricalChannel(labels=("a", "b"), scale=s, offset=((1 - s) / 2,) * 2, domain=("a", "b"),
                                     steps=(PLUGIN,))
            for name, s in metadata.get(PLUGIN, {}).items()}


@pytest.fixture
def plugin():
    """PLUGIN's hooks, as a method module outside app.privacy would register them."""
    registry.register_channel_builder(PLUGIN, _plugin_channels)
    registry.register_reconstructor(PLUGIN, reconstruct_step)  # mask's and png's
    yield
    registry._CHANNEL_BUILDERS.pop(PLUGIN)
    registry._RECONSTRUCTORS.pop(PLUGIN)


def test_a_registered_channel_builder_is_used_and_composes_with_the_others(plugin):
    errph = {"method": "errph", "guarantees": {"protected_columns": ["c"]},
             "metadata": {"errph": {"c": {"domain": ["a", "b"], "p0": 0.5, "p": [0.25, 0.25]}}}}
    mine = {"method": PLUGIN, "guarantees": {"protected_columns": ["c", "d"]},
            "metadata": {PLUGIN: {"c": 0.6}}}
    channels = step_channels(mine)
    assert channels["c"].scale == 0.6 and isinstance(channels["d"], Opaque)  # d: protected, no channel
    composed = chain_channels([errph, mine])["c"]
    assert composed.steps == ("errph", PLUGIN)
    assert composed.scale == pytest.approx(0.3)


def test_a_step_without_a_channel_builder_is_opaque_and_hooks_register_once(plugin):
    step = {"method": "test_unregistered", "guarantees": {"protected_columns": ["c"]}, "metadata": {}}
    assert isinstance(step_channels(step)["c"], Opaque)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register_channel_builder(PLUGIN, _plugin_channels)


def test_an_item_randomizer_is_known_by_its_published_metadata_not_its_name(plugin):
    """A release publishing its item randomization (metadata["itemsets"], as mask's) under
    another method's name: reconstruct, frequent_itemsets and the refusal to randomize it again
    treat it as mask's, with no list of method names to extend."""
    dense = np.random.default_rng(3).random((2000, 6)) < 0.4
    result = run("mask", MethodInput(columns=[], transactions=csr_of(dense)), p=0.8)
    source = SourceRelease(release_id="r1", method=PLUGIN, params={"p": 0.8},
                           guarantees=result.guarantees, metadata=result.metadata)
    release = MethodInput(columns=[ColumnInfo("items", "categorical")], transactions=result.transactions,
                          source=source)
    ctx = RunContext(rng=SecureRandom(seed=0))
    report = registry.get("reconstruct").run(release, ReconstructParams(itemsets=[["0", "1"]]), ctx)
    assert report.data["steps"][0]["method"] == PLUGIN
    assert report.data["steps"][0]["itemsets"][0]["support"] == pytest.approx(dense[:, :2].all(1).mean(), abs=0.05)
    mined = run("frequent_itemsets", release, minsup=0.3, max_len=2)
    assert "reconstructed" in mined.data["supports"]
    with pytest.raises(MethodInputError, match="already randomized"):
        registry.get("png").validate_against(PngParams(ps=[0.9]), release.columns, source)


def test_slow_params_must_be_parameters_of_the_method():
    """A time-limited job names its method's slow_params with their values (edges acceptance
    check): a name that is not a parameter would be advice nobody can follow."""
    fields = dict(name="x", family="f", kind=registry.MethodKind.release, summary="", params=PngParams,
                  guarantee="", paper="", run=lambda *a: None)
    with pytest.raises(ValueError, match=r"slow_params \['nope'\]"):
        registry.MethodSpec(**fields, slow_params=("nope",))
    assert registry.MethodSpec(**fields, slow_params=("group_size",)).slow_params == ("group_size",)


def test_a_hierarchy_check_needs_a_method_that_is_given_hierarchies():
    """check_hierarchies is called only for a method registered with uses_hierarchies (the service
    loads them for no other): a spec with the check and without the flag would never be checked."""
    from dataclasses import replace

    safepub = registry.get("safepub")
    assert safepub.check_hierarchies is not None and safepub.uses_hierarchies
    with pytest.raises(ValueError, match="check_hierarchies needs uses_hierarchies"):
        replace(safepub, uses_hierarchies=False)
    calls = []
    checked = replace(safepub, check=None, check_rows=None, check_hierarchies=lambda p, c, h: calls.append(h("x")))
    checked.validate_against(None, [], None, hierarchy=lambda column: column.upper())
    checked.validate_against(None, [], None)  # no hierarchies given (not a dataset's table): not called
    assert calls == ["X"]
