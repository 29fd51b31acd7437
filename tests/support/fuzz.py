"""Schema fuzzing with schemathesis against a real server: every operation of the served
OpenAPI document, positive and negative generation, each response checked for 5xx and for
conformance with the declared status codes, content types, headers and schemas.

Failures are collected (not raised inside Hypothesis, so nothing shrinks and one run reports
every distinct failure); the caller asserts the list is empty and reads the counts."""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (content_type_conformance, negative_data_rejection,
                                               response_headers_conformance,
                                               response_schema_conformance, status_code_conformance)

CONFORMANCE = [not_a_server_error, status_code_conformance, content_type_conformance,
               response_headers_conformance, response_schema_conformance]
# 5xx answers an operation declares as part of its contract: /readyz says 503 "not ready"
# when no worker heartbeats (the fuzzed server runs without workers, so nothing runs the jobs
# the fuzzer submits). Its status code and body are still checked against the schema.
DECLARED_5XX = {("GET", "/readyz"): {503}}
# A negative case whose only violations are these is not expected to be rejected:
# - a documented leniency, not a defect: date-time query parameters (since, until) also accept a
#   Unix timestamp (pydantic's datetime parsing);
# - violations the request on the wire does not carry (checked against the URL sent): this
#   harness sends its own Authorization header with every case (`headers_for`), so a case that
#   removed or malformed it is sent with a valid one; a query parameter the URL does not hold
#   (an invalid value schemathesis cannot serialize is left out); an object in the query is sent
#   as its keys (`{"k": …}` → `?action=k`, a plain string; two keys repeat the parameter, a 422).
# An unknown query parameter is not tolerated: it is a 422 naming it (it used to be ignored, and
# this list allowed that).
_LENIENT = (re.compile(r"^(query: )?violates `type` at /properties/(since|until)/.*became (number|integer)\)$"),
            re.compile(r"^(query: )?violates `type` at /properties/[^/ ]+/.*became object\)$"),
            re.compile(r"^header: violates `[a-zA-Z]+` (at /properties/Authorization\b.*|\(was Authorization\))$"))
_QUERY_VIOLATION = re.compile(r"^query: violates `[a-zA-Z]+` at /properties/([^/ ]+)")


def _tolerated(kind: str, how: str | None, sent_url: str | None = None) -> bool:
    if "AcceptedNegativeData" not in kind or not how:
        return False
    sent = set(parse_qs(urlsplit(sent_url).query, keep_blank_values=True)) if sent_url else None
    violations = [line.strip().removeprefix("- ").strip() for line in how.splitlines() if line.strip()]

    def off_the_wire(violation: str) -> bool:
        match = _QUERY_VIOLATION.match(violation)
        return sent is not None and match is not None and match.group(1) not in sent

    return bool(violations) and all(any(p.match(v) for p in _LENIENT) or off_the_wire(v) for v in violations)


@dataclass
class FuzzResult:
    requests: int = 0
    tolerated: int = 0  # negative cases accepted by a documented leniency (see _LENIENT)
    by_operation: collections.Counter = field(default_factory=collections.Counter)
    by_status: collections.Counter = field(default_factory=collections.Counter)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)  # (operation, kind) -> example

    def fail(self, operation: str, kind: str, detail: str) -> None:
        self.failures.setdefault((operation, kind), detail[:1500])

    def summary(self) -> str:
        return (f"{self.requests} requests over {len(self.by_operation)} operations; statuses "
                f"{dict(sorted(self.by_status.items()))}; {len(self.failures)} distinct failures; "
                f"{self.tolerated} negative cases accepted by a documented leniency")

    def report(self) -> str:
        return "\n\n".join(f"[{op}] {kind}:\n{detail}" for (op, kind), detail in self.failures.items())


def load_schema(base_url: str):
    return schemathesis.openapi.from_url(f"{base_url}/openapi.json")


def operations(schema) -> list:
    return [op.ok() for op in schema.get_all_operations()]


def _failure_kinds(exc: BaseException) -> list[str]:
    inner = getattr(exc, "exceptions", None) or [exc]
    return [f"{type(e).__name__}: {getattr(e, 'title', '') or str(e).splitlines()[0][:200]}" for e in inner]


def fuzz(schema, base_url: str, *, examples: int, headers_for: Callable[[Any], dict[str, str]],
         ids: dict[str, list[str]] | None = None, expect: Callable[[Any, Any], str | None] | None = None,
         negative: bool = True, derandomize: bool = False, result: FuzzResult | None = None) -> FuzzResult:
    """Fuzz every operation with ``examples`` generated cases per mode.

    headers_for(case) -> the headers (authentication) to send with a case; ids: real object ids
    that replace generated path/body ids half of the time (so the handlers behind a found
    object are reached, not only the 404 path); expect(case, response) -> a failure message or
    None (an extra property, e.g. "401 without a key")."""
    result = result or FuzzResult()
    ids = ids or {}
    session = requests.Session()
    modes = [GenerationMode.POSITIVE] + ([GenerationMode.NEGATIVE] if negative else [])
    for operation in operations(schema):
        label = f"{operation.method.upper()} {operation.path}"
        inputs = sum(len(part) for part in (operation.path_parameters, operation.query, operation.headers,
                                            operation.cookies, operation.body))
        for mode in modes if inputs else modes[:1]:  # no input: nothing to make invalid
            checks = CONFORMANCE + ([negative_data_rejection] if mode == GenerationMode.NEGATIVE else [])
            allowed_5xx = DECLARED_5XX.get((operation.method.upper(), operation.path), set())

            @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
                      phases=[Phase.explicit, Phase.generate],  # no shrinking: failures are collected
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
            def run(case, data) -> None:
                if mode == GenerationMode.POSITIVE:  # a negative case keeps its invalid ids
                    _substitute_ids(case, data, ids)
                headers = headers_for(case)
                try:
                    response = case.call(base_url=base_url, session=session, headers=headers, timeout=60)
                except requests.RequestException as exc:
                    result.fail(label, f"transport: {type(exc).__name__}", str(exc))
                    return
                result.requests += 1
                result.by_operation[label] += 1
                result.by_status[response.status_code] += 1
                run_checks = [c for c in checks if not (c is not_a_server_error
                                                        and response.status_code in allowed_5xx)]
                try:
                    case.validate_response(response, checks=run_checks, headers=headers)
                except (Failure, FailureGroup) as exc:
                    how = getattr(case.meta.phase.data, "description", None) if case.meta else None
                    for kind in _failure_kinds(exc):
                        if _tolerated(kind, how, response.request.url):
                            result.tolerated += 1
                            continue
                        result.fail(label, f"{mode.value} {kind}", f"{response.status_code} "
                                    f"{response.text[:500]}\n(generated: {how})\n"
                                    f"{case.as_curl_command(headers=headers)}")
                if expect is not None and (problem := expect(case, response)):
                    result.fail(label, problem, f"{response.status_code} {response.text[:300]}\n"
                                f"{case.as_curl_command(headers=headers)}")

            try:
                run()
            except Unsatisfiable:
                # no invalid input exists (an operation without parameters or body)
                assert mode == GenerationMode.NEGATIVE, label
    return result


def _substitute_ids(case, data, ids: dict[str, list[str]]) -> None:
    for name in list(case.path_parameters or {}):
        if name in ids and ids[name] and data.draw(st.booleans()):
            case.path_parameters[name] = data.draw(st.sampled_from(ids[name]))
    if isinstance(case.body, dict):
        for name in ("dataset_id", "release_id"):
            if name in case.body and ids.get(name) and data.draw(st.booleans()):
                case.body[name] = data.draw(st.sampled_from(ids[name]))
