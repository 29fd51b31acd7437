"""An experiment run where the shared public datasets are not (the Docker image has none, and
compose mounts none) fails on its input, naming the file it needs and VEIL_DATASETS_DIR: four of
the five failed as `internal` "the method failed (FileNotFoundError at …)", which told an
operator nothing of what to do (spec56 acceptance check)."""

from __future__ import annotations

import pytest

from app.privacy import registry
from app.privacy.context import RunContext

SMALL = {
    "experiment_ppnb": {"datasets": ["adult"], "p0_grid": [0.3], "seeds": [0], "train_sizes": [500],
                        "figure3": False},
    "experiment_itemsets": {"datasets": ["mushroom"], "ps": [0.9], "seeds": 1, "max_len": 2},
    "experiment_dp_release": {"tasks": ["adult_degree"], "methods": ["noprivacy"], "epsilons": [1.0]},
    "experiment_rfk": {"datasets": ["bank"], "repeats": 1, "n_estimators": 5, "stability_runs": 0,
                       "sample_size": 500, "eval_repeats": 1},
    "experiment_rfka": {"datasets": ["breast_cancer"], "variants": ["hamdist"], "ks": [2], "n_estimators": 5},
}


def test_every_experiment_is_covered():
    assert {s.name for s in registry.all_methods() if s.kind == registry.MethodKind.experiment} == set(SMALL)


@pytest.mark.parametrize("how", ["empty folder", "no folder"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_missing_shared_datasets_are_an_input_error_naming_the_file(name, how, tmp_path, monkeypatch):
    if how == "empty folder":
        monkeypatch.setenv("VEIL_DATASETS_DIR", str(tmp_path))
    else:  # no VEIL_DATASETS_DIR and no shared/datasets beside the package: the image's case
        import app.privacy.experiments as experiments

        monkeypatch.delenv("VEIL_DATASETS_DIR", raising=False)
        monkeypatch.setattr(experiments, "__file__", str(tmp_path / "app" / "privacy" / "experiments" / "__init__.py"))
    spec = registry.get(name)
    with pytest.raises(registry.MethodInputError) as caught:
        spec.run(None, spec.params.model_validate(SMALL[name]), RunContext())
    message = str(caught.value)
    assert "VEIL_DATASETS_DIR" in message
    assert ".csv" in message or ".dat" in message  # the file it needs, relative to the folder
    assert str(tmp_path) not in message  # not the server's own paths
