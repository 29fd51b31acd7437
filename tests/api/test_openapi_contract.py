"""The OpenAPI document as a contract for generated clients: what it declares is what the
service answers (problem+json errors, the bearer key, typed bodies), and it names and describes
every operation and parameter stably. Checked against the served document and, where a
declaration claims a behaviour (401 without a key, 422 for an unknown query parameter), against
the service itself."""

from __future__ import annotations

import re

import pytest

from tests.support.api import auth, submit, upload

PROBLEM = "application/problem+json"
PROBLEM_REF = "#/components/schemas/ProblemDetail"
VERBS = {"get", "put", "post", "delete", "patch"}


@pytest.fixture(scope="module")
def spec(client):
    return client.get("/openapi.json").json()


def operations(spec):
    for path, ops in spec["paths"].items():
        for verb, op in ops.items():
            if verb in VERBS:
                yield path, verb, op


def concrete(path: str) -> str:
    """The path with its parameters filled: ids that exist nowhere, a plot file name."""
    path = path.replace("{filename}", "x.png")
    return re.sub(r"\{[a-z_]*_id\}", "00000000-0000-0000-0000-000000000000", re.sub(r"\{(name|column)\}", "x", path))


def test_operation_ids_are_unique_function_names_without_path_or_verb(spec):
    ids = [op.get("operationId") for _, _, op in operations(spec)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for path, verb, op in operations(spec):
        op_id = op["operationId"]
        assert re.fullmatch(r"[a-z][a-z0-9_]*", op_id), op_id
        # FastAPI's default (name + path + verb, e.g. list_jobs_v1_jobs_get) changes when a path does
        assert not op_id.endswith(f"_{verb}") and "_v1_" not in op_id, (path, verb, op_id)


def test_every_operation_is_summarized_described_and_tagged_with_a_declared_tag(spec):
    tags = {t["name"] for t in spec["tags"]}
    assert all(t.get("description") for t in spec["tags"])
    for path, verb, op in operations(spec):
        assert op.get("summary") and op.get("description"), (verb, path)
        assert op.get("tags") and set(op["tags"]) <= tags, (verb, path, op.get("tags"))


def test_every_parameter_is_described(spec):
    for path, verb, op in operations(spec):
        for param in op.get("parameters", []):
            assert param.get("description"), (verb, path, param["name"])


def test_error_responses_are_problem_json_with_the_problem_schema(spec):
    """The handler sends application/problem+json: FastAPI's default puts the model under
    application/json, where a generated client looking for the answer's type finds no schema."""
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # a 422 shape never sent
    issue = spec["components"]["schemas"]["ProblemDetail"]["properties"]["errors"]["anyOf"][0]
    assert issue["items"] == {"$ref": "#/components/schemas/ProblemIssue"}
    for path, verb, op in operations(spec):
        for code, response in op["responses"].items():
            if int(code) < 400:
                continue
            content = response["content"]
            assert content[PROBLEM]["schema"] == {"$ref": PROBLEM_REF}, (verb, path, code)
            assert content[PROBLEM]["example"]["status"] == int(code), (verb, path, code)
            others = {m: c for m, c in content.items() if m != PROBLEM}
            # readyz's own 503 body is its readiness report; nothing else answers an error otherwise
            assert not others or (path, code) == ("/readyz", "503"), (verb, path, code, list(others))
            assert PROBLEM_REF not in str(others)


def test_app_wide_problems_are_declared_where_they_can_happen(spec):
    for path, verb, op in operations(spec):
        codes = set(op["responses"])
        assert "422" in codes, (verb, path)  # an unknown query parameter, on any operation
        if path != "/healthz":  # the in-flight limit's 503 (liveness is exempt)
            assert "503" in codes, (verb, path)
        if "requestBody" in op:  # the body limit and the stalled-body timeout
            assert {"408", "413"} <= codes, (verb, path)


def test_an_unknown_query_parameter_is_a_declared_422_on_every_operation(client, spec, owner):
    for path, verb, _ in operations(spec):
        r = client.request(verb.upper(), concrete(path), params={"no_such_parameter": 1}, headers=auth(owner))
        assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM), (verb, path, r.status_code)


def test_the_bearer_scheme_is_declared_and_applied_exactly_where_a_key_is_needed(client, spec):
    scheme = spec["components"]["securitySchemes"]["apiKey"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    public = set()
    for path, verb, op in operations(spec):
        assert "security" in op, (verb, path)  # stated either way, never left to a default
        body = {"json": {}} if "requestBody" in op else {}
        r = client.request(verb.upper(), concrete(path), **body)  # no key
        if op["security"]:
            assert op["security"] == [{"apiKey": []}], (verb, path)
            assert r.status_code == 401 and "401" in op["responses"], (verb, path, r.status_code)
            assert r.headers["www-authenticate"] == "Bearer"
        else:
            assert r.status_code != 401, (verb, path)
            public.add(path)
    assert public == {"/healthz", "/readyz", "/metrics", "/v1/methods", "/v1/methods/{name}"}
    assert all(op["security"] for path, _, op in operations(spec) if path.startswith("/v1/")
               and not path.startswith("/v1/methods"))


def test_every_success_response_has_a_schema(spec):
    for path, verb, op in operations(spec):
        for code, response in op["responses"].items():
            if not code.startswith("2") or code == "204":
                continue
            assert response.get("content"), (verb, path, code)
            for media, content in response["content"].items():
                assert content.get("schema"), (verb, path, code, media)


def test_binary_downloads_are_typed_as_bytes_and_text_as_text(spec):
    for path in ("/v1/datasets/{dataset_id}/data", "/v1/releases/{release_id}/data"):
        content = spec["paths"][path]["get"]["responses"]["200"]["content"]
        assert content["application/vnd.apache.parquet"]["schema"] == {"type": "string", "format": "binary"}
        assert content["text/csv"]["schema"] == {"type": "string"}
        # a generator reading one media type per response takes the first: mapping Parquet to
        # bytes (README) then gets every format as bytes
        assert next(iter(content)) == "application/vnd.apache.parquet"
    plot = spec["paths"]["/v1/reports/{report_id}/plots/{filename}"]["get"]["responses"]["200"]["content"]
    assert set(plot) == {"image/png", "image/svg+xml"}  # not application/json too


def _reachable(spec, schema, seen):
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if ref and ref not in seen:
            seen.add(ref)
            _reachable(spec, spec["components"]["schemas"][ref.rsplit("/", 1)[1]], seen)
        for value in schema.values():
            _reachable(spec, value, seen)
    elif isinstance(schema, list):
        for value in schema:
            _reachable(spec, value, seen)
    return seen


def test_no_response_union_mixes_a_number_with_a_const(spec):
    """openapi-python-client parses anyOf[number, const string] as the const alone: every
    finite job ε failed to parse. A one-value enum is parsed as a union should be."""
    refs = set()
    for _, _, op in operations(spec):
        for code, response in op["responses"].items():
            if code.startswith("2"):
                _reachable(spec, response.get("content", {}), refs)
    assert "#/components/schemas/Job" in refs

    def walk(node, where):
        if isinstance(node, dict):
            branches = node.get("anyOf", [])
            if any(b.get("type") in ("number", "integer") for b in branches):
                assert not any("const" in b for b in branches), where
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    for ref in refs:
        name = ref.rsplit("/", 1)[1]
        walk(spec["components"]["schemas"][name], name)


def test_a_job_body_matches_its_declared_epsilon_schema(client, spec, owner):
    """The served ε (debited at acceptance) is a number, which the declared union admits."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "eps.csv").json()
    job = submit(client, owner, "errph", {}, dataset_id=ds["id"]).json()
    branches = spec["components"]["schemas"]["Job"]["properties"]["epsilon"]["anyOf"]
    assert isinstance(job["epsilon"], float) and {"type": "number"} in branches
    assert {"type": "string", "enum": ["Infinity"]} in branches


def test_a_hierarchy_sent_as_octet_stream_is_accepted_as_declared(client, spec, owner):
    """Generated clients send a file body as application/octet-stream (they cannot send text/csv)."""
    declared = spec["paths"]["/v1/datasets/{dataset_id}/hierarchies/{column}"]["put"]["requestBody"]["content"]
    assert "application/octet-stream" in declared
    ds = upload(client, owner, b"c\nx\ny\n", "h.csv").json()
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/c", content=b"x;*\ny;*\n",
                   headers={**auth(owner), "Content-Type": "application/octet-stream"})
    assert r.status_code == 200, r.text


def _declared_defaults(spec, schema_name: str) -> dict:
    properties = spec["components"]["schemas"][schema_name]["properties"]
    return {name: prop["default"] for name, prop in properties.items() if "default" in prop}


@pytest.mark.parametrize("method,schema_name,required", [
    ("mask", "MaskParams", {}), ("png", "PngParams", {"ps": [0.9]}),
    ("frequent_itemsets", "FrequentItemsetsParams", {})])
def test_declared_defaults_sent_back_are_accepted_on_a_transaction_file(client, spec, owner, method,
                                                                        schema_name, required):
    """A generated client sends every field that has a default: `bins: 5` (tables only) made
    every mask, png and frequent_itemsets request on a transaction file a 422 (clientgen
    acceptance check)."""
    params = {**_declared_defaults(spec, schema_name), **required}
    assert "bins" in params
    tx = upload(client, owner, b"1 2 3\n2 3\n1 3\n", "t.dat").json()
    r = submit(client, owner, method, params, dataset_id=tx["id"])
    assert r.status_code == 202, r.text
    r = submit(client, owner, method, {**params, "bins": 8}, dataset_id=tx["id"])  # another value still is refused
    assert r.status_code == 422 and "'bins' applies to tabular datasets" in r.json()["detail"]


def test_declared_defaults_sent_back_are_accepted_by_reconstruct_on_a_table_release(client, spec, owner):
    """`estimator: "pooled"` (transactions only) made every generated reconstruct request on a
    table release a 422 (clientgen acceptance check)."""
    from app.worker import runner

    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n4,y\n", "t.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5, "columns": ["b"]}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    rid = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    params = _declared_defaults(spec, "ReconstructParams")
    assert params.get("estimator") == "pooled"
    r = submit(client, owner, "reconstruct", params, release_id=rid)
    assert r.status_code == 202, r.text


def test_every_page_declares_items_and_next_as_always_present(spec):
    """LedgerPage's `next` was optional (a default of None) where every other page's is required:
    generated clients typed the ledger's as `None | str | Unset` and the others' `None | str`
    (clientgen acceptance check). The service always sends it."""
    pages = {name: schema for name, schema in spec["components"]["schemas"].items() if name.endswith("Page")}
    assert {"LedgerPage", "JobPage", "AuditPage"} <= set(pages)
    for name, schema in pages.items():
        assert {"items", "next"} <= set(schema.get("required", [])), name


def test_fixed_vocabularies_in_answers_are_enums(spec):
    """A data shape, a method's kind, sources and shapes, and a ledger entry's kind were bare
    strings whose values only a description listed (clientgen acceptance check)."""
    schemas = spec["components"]["schemas"]
    shape = {"$ref": "#/components/schemas/DataShape"}
    assert schemas["DataShape"]["enum"] == ["table", "transactions"]
    for name in ("Dataset", "DatasetSummary", "Release", "ReleaseSummary"):
        assert schemas[name]["properties"]["shape"] == shape, name
    method = schemas["Method"]["properties"]
    # the registry's own enums (app/privacy/registry.py), not a copy of their values
    assert method["kind"] == {"$ref": "#/components/schemas/MethodKind"}
    assert schemas["MethodKind"]["enum"] == ["release", "analysis", "experiment"]
    assert method["sources"]["items"] == {"$ref": "#/components/schemas/MethodSource"}
    assert schemas["MethodSource"]["enum"] == ["dataset", "release", "none"]
    assert method["shapes"]["items"] == shape
    assert schemas["BudgetEntry"]["properties"]["kind"]["enum"] == ["debit", "refund", "reconciliation"]


def _problem_classes():
    from app import errors

    seen, todo = [], [errors.VeilError]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


def test_every_problem_type_the_service_sends_is_documented(spec):
    """A client tells problems apart by `type`, but the document gave only its pattern
    (https://veil.dev/problems/<slug>): budget-exhausted, the one 409 a client acts on (raise
    the cap), appeared nowhere in it (apic acceptance check)."""
    described = spec["components"]["schemas"]["ProblemDetail"]["properties"]["type"]["description"]
    for cls in _problem_classes():
        assert f"`{cls.slug}`" in described, cls.__name__
    conflict = spec["paths"]["/v1/jobs"]["post"]["responses"]["409"]["description"]
    assert "budget-exhausted" in conflict, conflict


def test_every_property_of_a_success_body_is_required(spec):
    """The service always sends every field of its answers (no exclude_unset anywhere), but a
    field with a default was declared optional: generated clients typed a job's `links` and
    `epsilon`, a dataset's `deleted` and a column's `bounds` as `Unset | …` (apic acceptance
    check; LedgerPage's `next` was the same, fixed by the clientgen check)."""
    refs = set()
    for _, _, op in operations(spec):
        for code, response in op["responses"].items():
            if code.startswith("2"):
                _reachable(spec, response.get("content", {}), refs)
    assert {"#/components/schemas/Job", "#/components/schemas/Column"} <= refs
    optional = {}
    for ref in refs:
        name = ref.rsplit("/", 1)[1]
        schema = spec["components"]["schemas"][name]
        missing = set(schema.get("properties", {})) - set(schema.get("required", []))
        if missing:
            optional[name] = sorted(missing)
    assert optional == {}, optional
