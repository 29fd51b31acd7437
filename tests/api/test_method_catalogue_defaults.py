"""GET /v1/methods promises every parameter's default (docs/methods pages quote them): a default
made by a factory (a fresh list or dict) is one too — pydantic left those out of the schema,
so errph's `per_column` or experiment_ppnb's `seeds` showed none (acceptance check of the docs)."""

from __future__ import annotations

from pydantic_core import PydanticUndefined


def test_every_parameter_with_a_default_shows_it_in_the_catalogue_and_the_openapi_document(client):
    from app.privacy import registry

    registry.load_all()
    served = {m["name"]: m["params_schema"] for m in client.get("/v1/methods").json()}
    components = client.get("/openapi.json").json()["components"]["schemas"]
    for spec in registry.all_methods():
        for name, info in spec.params.model_fields.items():
            if info.default is PydanticUndefined and info.default_factory is None:
                continue  # required (e.g. aim's epsilon)
            expected = info.default_factory() if info.default_factory else info.default
            prop = served[spec.name]["properties"][name]
            assert "default" in prop, f"{spec.name}.{name}: no default in /v1/methods"
            if info.default_factory:
                assert prop["default"] == expected, (spec.name, name)
                assert components[spec.params.__name__]["properties"][name]["default"] == expected
    assert served["experiment_ppnb"]["properties"]["seeds"]["default"] == [0, 1, 2]
    assert served["errph"]["properties"]["per_column"]["default"] == {}
