"""Which columns are quasi-identifiers and which one is sensitive: from the job's parameters,
else from the dataset's schema (ColumnInfo.role)."""

from __future__ import annotations

from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError, no_repeats

MAX_QUASI_IDENTIFIERS = 32
MAX_SENSITIVE = 8  # columns each model must hold on (one count table per column per check)


def resolve_quasi_identifiers(columns: list[ColumnInfo], given: list[str] | None,
                              declared: list[str] | None = None) -> list[str]:
    by_name = {c.name: c for c in columns}
    if given is not None:
        chosen = list(given)
    elif declared:
        chosen = [q for q in declared if q in by_name]
    else:
        chosen = [c.name for c in columns if c.role == "quasi_identifier"]
    if not chosen:
        raise MethodInputError("no quasi-identifiers: declare column roles in the schema or pass "
                               "quasi_identifiers")
    try:
        no_repeats(chosen, "quasi_identifiers")
    except ValueError as exc:
        raise MethodInputError(str(exc)) from None
    if len(chosen) > MAX_QUASI_IDENTIFIERS:
        raise MethodInputError(f"{len(chosen)} quasi-identifiers; at most {MAX_QUASI_IDENTIFIERS}")
    for name in chosen:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r} in quasi_identifiers")
        if by_name[name].role == "identifier":
            raise MethodInputError(f"column {name!r} is an identifier: identifiers are dropped, "
                                   "not generalized")
    return chosen


def resolve_sensitive(columns: list[ColumnInfo], given: str | list[str] | None, quasi_identifiers: list[str],
                      needed: bool) -> str | list[str] | None:
    """The sensitive column (or columns, when a list is given: each is checked)."""
    if isinstance(given, list):
        if not given:
            raise MethodInputError("sensitive is an empty list: name at least one column")
        try:
            no_repeats(given, "sensitive")
        except ValueError as exc:
            raise MethodInputError(str(exc)) from None
        return [resolve_sensitive(columns, name, quasi_identifiers, needed) for name in given]
    by_name = {c.name: c for c in columns}
    if given is not None:
        name = given
    elif needed:
        declared = [c.name for c in columns if c.role == "sensitive"]
        if not declared:
            raise MethodInputError("l, alpha, t, beta and delta_disclosure need a sensitive column: pass sensitive")
        if len(declared) > MAX_SENSITIVE:
            raise MethodInputError(f"{len(declared)} columns are declared sensitive ({', '.join(declared)}), "
                                   f"more than the {MAX_SENSITIVE} a job checks: pass sensitive to name them")
        if len(declared) > 1:  # the schema's word: every model holds on each of them
            return resolve_sensitive(columns, declared, quasi_identifiers, needed)
        name = declared[0]
    else:
        return None
    if name not in by_name:
        raise MethodInputError(f"unknown sensitive column {name!r}")
    if name in quasi_identifiers:
        raise MethodInputError(f"column {name!r} cannot be both sensitive and a quasi-identifier")
    if by_name[name].role == "identifier":
        raise MethodInputError(f"column {name!r} is an identifier and is dropped")
    return name


def resolve_label(columns: list[ColumnInfo], given: str | None, quasi_identifiers: list[str], *,
                  numeric: bool) -> str:
    """The label column of a classification metric: ``given``, else the schema's one column of
    role 'label' (refusals name `label`). ``numeric``: whether a numeric column may be one (its
    values read as categories)."""
    by_name = {c.name: c for c in columns}
    name = given
    if name is None:
        declared = [c.name for c in columns if c.role == "label"]
        if len(declared) != 1:
            found = f"the schema declares {len(declared)} ({', '.join(declared)})" if declared else "the schema declares none"
            raise MethodInputError("label: metric 'classification' counts each class's most frequent label and "
                                   f"needs one label column; {found}: pass label")
        name = declared[0]
    if name not in by_name:
        raise MethodInputError(f"label: unknown column {name!r}")
    if name in quasi_identifiers:
        raise MethodInputError(f"label: column {name!r} is a quasi-identifier; the label must not be one (it is "
                               "released as is, not generalized): drop it from quasi_identifiers or choose another label")
    if by_name[name].role == "identifier":
        raise MethodInputError(f"label: column {name!r} is an identifier, which is never released")
    if not numeric and by_name[name].type == "numeric":
        raise MethodInputError(f"label: column {name!r} is numeric; a classification label must be categorical or "
                               "boolean (a number's text may depend on the rest of the column)")
    return name
