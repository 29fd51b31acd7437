"""What the registry holds a VEIL_PLUGINS module to (plugin acceptance sweep: a third-party method
written from the docs, then its authors' usual mistakes). Registration is the contract: a price
that is no ε, a name or a params model that is taken, and a module that does not import are
refused with a message naming the method or module, never left to corrupt a budget or the
OpenAPI document, or to restart the service in a loop."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from app.privacy import registry
from app.privacy.data import ColumnInfo


class _Priced(registry.Params):
    pass


def _spec(name: str, params=_Priced, **kwargs) -> registry.MethodSpec:
    return registry.MethodSpec(name=name, family="plugin", kind=registry.MethodKind.release, summary="x",
                               params=params, guarantee="x", paper="x", run=lambda d, p, c: None, **kwargs)


@pytest.mark.parametrize("price, says", [
    (-5.0, "-5"),  # debited as is, it gave the dataset's budget 5 back
    (float("nan"), "nan"),  # the budget's spent figure became NaN: its dataset answered 500 for good
    ("abc", "'abc'"),  # a ValueError from float(), at registry.py
    (True, "True"),  # a bool is no price (float(True) was 1)
])
def test_a_price_that_is_no_epsilon_is_a_contract_error_naming_the_method(price, says):
    spec = _spec("plugin_priced", epsilon=lambda params, columns: price)
    with pytest.raises(registry.MethodContractError, match="plugin_priced") as caught:
        spec.epsilon_cost(_Priced(), [ColumnInfo("a", "categorical")])
    assert says in str(caught.value) and "MethodSpec.epsilon" in str(caught.value)


@pytest.mark.parametrize("price, cost", [(0, 0.0), (2, 2.0), (0.5, 0.5), (math.inf, math.inf), (None, None),
                                         (np.float32(0.25), 0.25), (np.int64(3), 3.0)])
def test_a_price_that_is_an_epsilon_is_taken(price, cost):
    spec = _spec("plugin_priced", epsilon=lambda params, columns: price)
    assert spec.epsilon_cost(_Priced(), []) == cost


def test_a_name_taken_by_a_built_in_names_the_module_that_has_it():
    registry.load_all()
    with pytest.raises(ValueError, match="registered twice") as caught:
        registry.register(_spec("warner"))
    assert "app.privacy.warner" in str(caught.value)
    assert registry.get("warner").run.__module__ == "app.privacy.warner"


def test_a_params_model_named_as_another_methods_is_refused():
    """The OpenAPI document names a params schema after its class: a plugin's own `WarnerParams`
    (warner.py copied as a template) renamed the built-in's schema to
    `app__privacy__warner__WarnerParams` in the served document, under every generated client."""
    class WarnerParams(registry.Params):
        q: float = 0.5

    registry.load_all()

    with pytest.raises(ValueError, match="WarnerParams") as caught:
        registry.register(_spec("plugin_warner_like", params=WarnerParams))
    assert "'warner'" in str(caught.value)
    assert registry.get("plugin_warner_like") is None


def _load_in_a_fresh_process(tmp_path, source: str, *calls: str) -> subprocess.CompletedProcess:
    (tmp_path / "plugin_under_test.py").write_text(textwrap.dedent(source))
    code = "from app.privacy import registry\n" + "\n".join(calls)
    env = {**os.environ, "VEIL_PLUGINS": "plugin_under_test",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("source, says", [
    ("import numpy\nimport no_such_package_for_veil\n",
     "ModuleNotFoundError: No module named 'no_such_package_for_veil' (", ),
    ("def f(:\n    pass\n", "SyntaxError"),
    ("from app.privacy.registry import MethodKind, MethodSpec, Params, register\n"
     "register(MethodSpec(name='errph', family='x', kind=MethodKind.release, summary='x', params=Params,\n"
     "                    guarantee='x', paper='x', run=print))\n", "registered twice"),
])
def test_a_plugin_that_does_not_import_is_named_and_stays_an_error(tmp_path, source, says):
    """Each later call raises the same error: a registry missing the plugin's methods (and those
    after it) was answered as complete."""
    calls = ("for attempt in (1, 2):",
             "    try:",
             "        registry.load_all()",
             "    except registry.PluginError as exc:",
             "        print(attempt, exc)",
             "    else:",
             "        print(attempt, 'loaded', len(registry.all_methods()))")
    done = _load_in_a_fresh_process(tmp_path, source, *calls)
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0][2:] == lines[1][2:], done.stdout + done.stderr
    assert "VEIL_PLUGINS" in lines[0] and "'plugin_under_test'" in lines[0] and says in lines[0], lines
    assert "plugin_under_test.py" in lines[0], lines  # where, for its author
