"""The method registry: the single source for the API's request schemas, the /v1/methods
catalogue, job dispatch, the docs and the OpenAPI document.

A method module ends with one ``register(MethodSpec(...))`` call; ``load_all()`` imports every
module of ``app.privacy`` so the registry is complete without a central list.
"""

from __future__ import annotations

import importlib
import numbers
import os
import pkgutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, declared_bounds_problem
from app.privacy.json_types import JsonTyped
from app.privacy.results import Result


class MethodKind(StrEnum):
    release = "release"  # produces a protected release (a new table or transaction set)
    analysis = "analysis"  # reads a release (or dataset) and produces a report or a model
    experiment = "experiment"  # runs a paper's evaluation protocol, produces a report


class MethodSource(StrEnum):
    dataset = "dataset"
    release = "release"
    none = "none"  # experiments read the shared datasets or generate their own


class DataShape(StrEnum):
    table = "table"
    transactions = "transactions"


def _factory_defaults(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Write a factory-made default (a fresh list or dict per instance) into the JSON Schema:
    pydantic leaves those out, so /v1/methods and the OpenAPI document showed no default for
    e.g. errph's `per_column` or experiment_ppnb's `seeds`, while promising every default."""
    properties = schema.get("properties", {})
    for name, info in model.model_fields.items():
        prop = properties.get(info.alias or name)
        if prop is not None and info.default_factory is not None and "default" not in prop:
            prop["default"] = to_jsonable_python(info.default_factory())


class Params(JsonTyped):
    """Base of every method's parameter model: unknown fields are an error, not ignored, a
    number must be finite (JSON's NaN / Infinity extensions would pass every bound check), and
    numbers and booleans must be JSON's (json_types)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, json_schema_extra=_factory_defaults)


# A parameter's json_schema_extra: it applies to one shape of input only.
TABLES_ONLY = {"x-tables-only": True}
TRANSACTIONS_ONLY = {"x-transactions-only": True}
_ONLY = {"table": "x-transactions-only", "transactions": "x-tables-only"}  # what a shape cannot take


def misfit_params(params: Params, shape: str) -> list[str]:
    """The parameters given a value other than their default that do not apply to an input of
    this shape: the service refuses them at submission, before any debit. A default sent
    explicitly is not refused: generated clients send every field that has a default (the
    OpenAPI document's ``bins: 5`` made every mask on a transaction file a 422)."""
    fields = type(params).model_fields
    marker = _ONLY.get(shape)
    return [name for name in sorted(params.model_fields_set)
            if marker and isinstance(extra := fields[name].json_schema_extra, dict) and extra.get(marker)
            and getattr(params, name) != fields[name].get_default(call_default_factory=True)]


class MethodInputError(ValueError):
    """The input does not fit the method (unknown column, wrong type, missing hierarchy...).
    The message names the problem and is shown to the caller as is: never put data values in it."""


class MethodContractError(TypeError):
    """A method broke the registry's contract (a VEIL_PLUGINS method, usually): its ``epsilon``
    priced a job at no ε, its run returned no result object, or one of another kind, or a release
    without the common guarantee keys. The message names the method and what to change and holds
    no data value: the job's error shows it, and the API's log when a submission meets it."""


class PluginError(ImportError):
    """A VEIL_PLUGINS module that cannot be imported (or registers a name that is taken): the
    message names the module, the error and where it was raised."""


def no_repeats(values, what: str):
    """``values`` unchanged, or a ValueError naming the first one repeated (a caller's list of
    names: its own input, so it may be echoed)."""
    if values is not None and len(set(values)) != len(values):
        seen = set()
        first = next(v for v in values if v in seen or seen.add(v))
        raise ValueError(f"{what} must not repeat: {first!r} is given {list(values).count(first)} times")
    return values


MAX_LABEL_CLASSES = 256  # a class column with more values is a number picked by mistake


def require_declared_classes(info: ColumnInfo, subject: str, need: str) -> None:
    """A label the schema's profile already shows to have fewer than two classes, or more
    than MAX_LABEL_CLASSES, is refused at submission (before any ε or time is spent); the run
    checks the data itself."""
    if info.distinct is not None and info.distinct < 2:
        what = "is missing in every row" if info.distinct == 0 else "has a single class"
        raise MethodInputError(f"{subject} {info.name!r} {what}: {need}")
    if info.distinct is not None and info.distinct > MAX_LABEL_CLASSES:
        raise MethodInputError(too_many_classes(subject, info.name, info.distinct))


def declared_bounds(info: ColumnInfo, of_release: bool = False) -> tuple[float, float] | None:
    """A numeric column's declared bounds as floats (None when it has none), or a
    MethodInputError naming the column when they break data.declared_bounds_problem. The schema
    refuses such bounds when they are declared; this catches a schema stored before it did
    (and a ColumnInfo built in code), before a method divides by their width. ``of_release``: the
    columns are a release's, kept from its dataset when it was made — no route edits them."""
    if info.bounds is None:
        return None
    lo, hi = float(info.bounds[0]), float(info.bounds[1])
    if (problem := declared_bounds_problem(lo, hi)) is not None:
        remedy = ("this release kept them from its dataset's schema when it was made, and a release's "
                  "schema is not edited: declare usable bounds on the dataset and make the release again"
                  if of_release else "the schema refuses such bounds now: declare usable ones in it")
        raise MethodInputError(f"column {info.name!r}: declared bounds {problem} ({remedy})")
    return lo, hi


def too_many_classes(subject: str, name: str, classes: int) -> str:
    return (f"{subject} {name!r} has {classes} distinct values: a class column holds at most "
            f"{MAX_LABEL_CLASSES} (a numeric column needs binning first)")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    family: str
    kind: MethodKind
    summary: str
    params: type[Params]
    guarantee: str  # the privacy notion in a phrase, for the catalogue
    paper: str
    run: Callable[[MethodInput, Any, RunContext], Result]
    sources: frozenset[MethodSource] = frozenset({MethodSource.dataset, MethodSource.release})
    shapes: frozenset[DataShape] = frozenset({DataShape.table})
    # ε debited from the root dataset's budget when a job is accepted; None = not a DP step.
    epsilon: Callable[[Any, list[ColumnInfo]], float | None] | None = None
    # Checks the params against the input's schema before a job is accepted (no data read).
    check: Callable[[Any, list[ColumnInfo], SourceRelease | None], None] | None = None
    # Checks the params against the input's record count (also known before any data is read)
    # and its schema: a k above it, or a release too large to randomize, is a 422 at
    # submission, not a job that fails.
    check_rows: Callable[[Any, int, list[ColumnInfo]], None] | None = None
    # Checks the params against the input's uploaded hierarchies (public, no record read) at
    # submission: ``hierarchy(column)`` parses the stored hierarchy of a column whose
    # ColumnInfo.has_hierarchy (None should it have gone since). A hierarchy that makes every run
    # fail is a 422 naming it, not a job that fails when it starts. Only with uses_hierarchies.
    check_hierarchies: Callable[[Any, list[ColumnInfo], Callable[[str], Any]], None] | None = None
    produces_randomness: bool = True  # draws privacy-producing noise: no seed outside test mode
    # Reads the dataset's uploaded hierarchies (MethodInput.hierarchies): only its jobs load and
    # parse them, and its releases' `release.created` event names them (hierarchies_sha256):
    # those its ReleaseResult.hierarchies_used lists, every one it was given when it does not say (None).
    uses_hierarchies: bool = False
    # The `kind` its reports show, when not the method's name (reconstruct's say "reconstruction").
    report_kind: str | None = None
    docs: str = ""  # relative path of the method's doc page
    # The parameters whose larger values make a job slower, most effective first: a job stopped
    # by its time limit names them with the values it ran at, so the caller knows what to lower.
    slow_params: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.check_hierarchies is not None and not self.uses_hierarchies:
            raise ValueError(f"method {self.name!r}: check_hierarchies needs uses_hierarchies (only such "
                             "methods are given the hierarchies)")
        unknown = [n for n in self.slow_params if n not in self.params.model_fields]
        if unknown:
            raise ValueError(f"method {self.name!r}: slow_params {unknown} are not parameters of it")

    def epsilon_cost(self, params: Any, columns: list[ColumnInfo]) -> float | None:
        """The ε a job is debited: None (no DP step), or a number ≥ 0 (∞ included). Anything else
        is refused here: -5 was debited as it came, giving the budget 5 back, and NaN made the
        dataset's spent figure NaN (its budget, and the dataset, answered 500 for good)."""
        if self.epsilon is None:
            return None
        cost = self.epsilon(params, columns)
        if cost is None:
            return None
        if isinstance(cost, bool) or not isinstance(cost, numbers.Real) or not cost >= 0:  # numpy's too
            raise MethodContractError(f"method {self.name!r} priced the job at ε = {cost!r}: its "
                                      "MethodSpec.epsilon must return a number ≥ 0 (math.inf for an "
                                      "unbounded ε) or None (no DP step)")
        return float(cost)

    def validate_against(self, params: Any, columns: list[ColumnInfo],
                         source: SourceRelease | None, rows: int | None = None,
                         hierarchy: Callable[[str], Any] | None = None) -> None:
        for info in columns:  # every method's: one rule for what declared bounds may be
            declared_bounds(info, of_release=source is not None)
        if self.check is not None:
            self.check(params, columns, source)
        if self.check_rows is not None and rows is not None:
            self.check_rows(params, rows, columns)
        if self.check_hierarchies is not None and hierarchy is not None:
            self.check_hierarchies(params, columns, hierarchy)


_REGISTRY: dict[str, MethodSpec] = {}
_RECONSTRUCTORS: dict[str, Callable[..., dict[str, Any]]] = {}
_CHANNEL_BUILDERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_loaded = False
_load_error: PluginError | None = None
_PLUGIN_METHODS: set[str] = set()  # the names the VEIL_PLUGINS modules registered


def register(spec: MethodSpec) -> MethodSpec:
    if spec.name in _REGISTRY:
        first = _REGISTRY[spec.name].run.__module__
        raise ValueError(f"method {spec.name!r} is registered twice (first by {first}): a VEIL_PLUGINS "
                         "method needs a name of its own")
    if not issubclass(spec.params, Params):
        raise TypeError(f"{spec.name}: params model must derive from registry.Params")
    # The OpenAPI document names a params schema after its class: a second class of the same
    # name (a method module copied as a template) renamed both to their module paths
    # (`app__privacy__warner__WarnerParams`) under every generated client.
    taken = next((other for other in _REGISTRY.values() if other.params is not spec.params
                  and other.params.__name__ == spec.params.__name__), None)
    if taken is not None:
        raise ValueError(f"method {spec.name!r}: its params model is named {spec.params.__name__!r}, as "
                         f"the one of method {taken.name!r} is (the OpenAPI document names a schema "
                         "after its class): give the class a name of its own")
    _REGISTRY[spec.name] = spec
    return spec


def _register_hook(table: dict[str, Callable], what: str, release_method: str, fn: Callable) -> None:
    if release_method in table:
        raise ValueError(f"{what} for {release_method!r} is registered twice")
    table[release_method] = fn


def register_reconstructor(release_method: str, fn: Callable[..., dict[str, Any]]) -> None:
    """The ``reconstruct`` analysis dispatches on the release's method through this table."""
    _register_hook(_RECONSTRUCTORS, "reconstructor", release_method, fn)


def reconstructor(release_method: str) -> Callable[..., dict[str, Any]] | None:
    load_all()
    return _RECONSTRUCTORS.get(release_method)


def register_channel_builder(release_method: str, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """What a randomized-response step did to each column (rr_channels.step_channels): ``fn``
    reads the step's published metadata and returns a channel per column it randomized."""
    _register_hook(_CHANNEL_BUILDERS, "channel builder", release_method, fn)


def channel_builder(release_method: str) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    load_all()
    return _CHANNEL_BUILDERS.get(release_method)


def plugin_modules() -> list[str]:
    """The modules VEIL_PLUGINS names, in order."""
    return [n for n in (part.strip() for part in os.environ.get("VEIL_PLUGINS", "").split(",")) if n]


def load_all() -> dict[str, MethodSpec]:
    """Import every module below app.privacy once; each registers its methods. Then the
    VEIL_PLUGINS modules: one that fails to import raises PluginError, now and at every later
    call (a registry without its methods is never answered as complete)."""
    global _loaded, _load_error
    if _load_error is not None:
        raise _load_error
    if not _loaded:
        _loaded = True
        package = importlib.import_module("app.privacy")
        for module in pkgutil.walk_packages(package.__path__, prefix="app.privacy."):
            importlib.import_module(module.name)
        # Extra method modules outside the package (e.g. the test suite's diagnostics).
        for name in plugin_modules():
            before = set(_REGISTRY)
            try:
                importlib.import_module(name)
            except Exception as exc:
                _load_error = PluginError(_import_failure(name, exc))
                raise _load_error from exc
            _PLUGIN_METHODS.update(set(_REGISTRY) - before)
    return _REGISTRY


def _import_failure(module: str, exc: BaseException) -> str:
    """'VEIL_PLUGINS: module 'x' cannot be imported: ModuleNotFoundError: No module named 'y'
    (/path/x.py, line 3)': the last place in the module's own file, else where it was raised."""
    where = None
    if isinstance(exc, SyntaxError) and exc.filename:
        where = (exc.filename, exc.lineno)
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if Path(f.filename).stem == module.rsplit(".", 1)[-1]]
        if own or frames:
            where = ((own or frames)[-1].filename, (own or frames)[-1].lineno)
    text = exc.msg if isinstance(exc, SyntaxError) else str(exc)  # a SyntaxError's str says where too
    text = text.splitlines()[0] if text else ""
    at = f" ({where[0]}, line {where[1]})" if where else ""
    return f"VEIL_PLUGINS: module {module!r} cannot be imported: {type(exc).__name__}: {text}{at}"


def is_plugin(name: str) -> bool:
    """Whether a VEIL_PLUGINS module registered the method (Veil's own docs leave it out)."""
    load_all()
    return name in _PLUGIN_METHODS


def get(name: str) -> MethodSpec | None:
    return load_all().get(name)


def all_methods() -> list[MethodSpec]:
    return sorted(load_all().values(), key=lambda s: (s.kind, s.family, s.name))


def at_least_k_records(params: Any, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    """A k-anonymous output needs k records at least (records dropped later only lower it)."""
    if rows < params.k:
        raise MethodInputError(f"the input has {rows} records, fewer than k = {params.k}")
