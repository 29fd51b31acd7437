from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from app.deps import OffLoopRoute
from app.errors import NotFound, problem_responses
from app.methods.schemas import Method
from app.privacy import registry

router = APIRouter(prefix="/v1/methods", tags=["methods"], route_class=OffLoopRoute)


def describe(spec: registry.MethodSpec) -> Method:
    return Method(name=spec.name, family=spec.family, kind=spec.kind.value, summary=spec.summary,
                  guarantee=spec.guarantee, paper=spec.paper,
                  sources=sorted(s.value for s in spec.sources),
                  shapes=sorted(s.value for s in spec.shapes),
                  epsilon_debited=spec.epsilon is not None,
                  params_schema=spec.params.model_json_schema(), docs=spec.docs)


@router.get("", response_model=list[Method], responses=problem_responses(422, 503))
def list_methods() -> list[Method]:
    """The method catalogue: every method's parameters (JSON Schema with defaults), the
    privacy notion it gives, and its paper. Public: no key needed."""
    return [describe(s) for s in registry.all_methods()]


@router.get("/{name}", response_model=Method, responses=problem_responses(404, 422, 503))
def get_method(name: Annotated[str, Path(description="the method's name, e.g. `errph`")]) -> Method:
    """One method of the catalogue, by name."""
    spec = registry.get(name)
    if spec is None:
        raise NotFound(f"no method named {name!r}")
    return describe(spec)
