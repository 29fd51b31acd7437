"""The registry's per-method hooks: a randomizer registered outside app.privacy (as a plugin
would be) is read back by the chain code without any edit to it."""

from __future__ import annotations

import pytest

from app.privacy import registry
from app.privacy.rr_channels import CategoricalChannel, Opaque, chain_channels, step_channels

PLUGIN = "test_plugin_rr"


def _plugin_channels(metadata):
    return {name: CategoricalChannel(labels=("a", "b"), scale=s, offset=((1 - s) / 2,) * 2, domain=("a", "b"),
                                     steps=(PLUGIN,))
            for name, s in metadata.get(PLUGIN, {}).items()}


@pytest.fixture
def plugin():
    registry.register_channel_builder(PLUGIN, _plugin_channels)
    yield
    registry._CHANNEL_BUILDERS.pop(PLUGIN)


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
