"""Settings for the property-based tests (Hypothesis): each test states its own bounded
``max_examples``; examples are derived from the test's name (``derandomize``) and no example
database is kept, so CI runs the same examples every time.

``VEIL_PROPERTY_SCALE=20`` multiplies every test's examples and draws them at random (a
different set each run): how to look for new counterexamples by hand, e.g.
``VEIL_PROPERTY_SCALE=20 .venv/bin/python -m pytest -q tests/privacy/test_properties_*.py``.
A failure prints the minimal example and the ``@reproduce_failure`` line that replays it."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SCALE = float(os.environ.get("VEIL_PROPERTY_SCALE", "1"))


def bounded(max_examples: int) -> settings:
    return settings(max_examples=max(1, int(max_examples * SCALE)), deadline=None,
                    derandomize=SCALE == 1, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
