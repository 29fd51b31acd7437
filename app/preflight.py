"""What every `veil` command checks before it starts: the VEIL_* settings, VEIL_DATASETS_DIR and
the VEIL_PLUGINS modules — a bad value named in one line, before PostgreSQL starts or a process
is spawned, rather than in a traceback (or a restart loop) from wherever it is first used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.config import get_settings


def check_settings() -> None:
    """A bad VEIL_* value (VEIL_WORKERS=abc, a negative limit) is named in one line, not a
    pydantic traceback from wherever the settings were first read."""
    from pydantic import ValidationError

    try:
        get_settings()
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            if not error["loc"]:  # a rule between two settings names both itself
                lines.append(f"veil: {message}")
                continue
            name = str(error["loc"][0])
            lines.append(f"veil: {name if name.isupper() else 'VEIL_' + name.upper()}: {message}")
        raise SystemExit("\n".join(lines)) from None
    _check_plugins()
    _check_datasets_dir()


def _check_datasets_dir() -> None:
    """VEIL_DATASETS_DIR set to a folder that is not there was accepted, and every experiment_*
    job failed when it ran. Unset it for the default (a `shared/datasets` beside the checkout)."""
    value = os.environ.get("VEIL_DATASETS_DIR")
    if value and not Path(value).is_dir():
        raise SystemExit(f"veil: VEIL_DATASETS_DIR: {value} is not a directory (the shared public "
                         "datasets the experiment_* methods read)")


def _check_plugins() -> None:
    """VEIL_PLUGINS names modules every process imports with the registry: one that cannot be
    found sent `veil serve`'s API processes into a restart loop, a traceback each time."""
    import importlib.util

    for name in filter(None, (n.strip() for n in os.environ.get("VEIL_PLUGINS", "").split(","))):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise SystemExit(f"veil: VEIL_PLUGINS: no module named {name!r} (on this Python's path)")


def import_plugins(command: str) -> None:
    """The VEIL_PLUGINS modules, imported before anything starts: one that is there but fails to
    import (a package it lacks, a method name a built-in has) passed the check above, and `veil
    serve` printed its key, then restarted its API and worker processes in a loop, a traceback
    each time. `serve` imports them in a process of their own (its own process never holds the
    library: ~250 MB); a worker imports them anyway."""
    if command == "serve":
        done = subprocess.run([sys.executable, "-c", "from app.preflight import import_plugins; "
                               "import_plugins('api')"], capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            raise SystemExit(lines[-1] if lines else f"veil: VEIL_PLUGINS: importing them failed "
                             f"(exit status {done.returncode})")
        return
    from app.privacy import registry

    try:
        registry.load_all()
    except registry.PluginError as exc:
        raise SystemExit(f"veil: {exc}") from None
    if command == "api":
        _refuse_schema_name_clashes(registry)


def _refuse_schema_name_clashes(registry) -> None:
    """The OpenAPI document names a schema after its class: a plugin params class named like
    one of Veil's own models (`Job`) turned Veil's schema into `Job-Input` and `Job-Output`
    under every generated client (plugin acceptance sweep)."""
    from pydantic import BaseModel

    from app.main import create_app

    create_app()  # imports every router's models

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    def veils(cls) -> bool:
        return cls.__module__.split(".")[0] in ("app", "fastapi")

    ours = {c.__name__ for c in subclasses(BaseModel) if veils(c)}
    # a plugin may use one of Veil's own classes (registry.Params for no parameters): one schema
    clashes = [(spec.name, spec.params.__name__) for spec in registry.all_methods()
               if registry.is_plugin(spec.name) and not veils(spec.params) and spec.params.__name__ in ours]
    if clashes:
        named = ", ".join(f"method {m!r}'s params class {c!r}" for m, c in clashes)
        raise SystemExit(f"veil: VEIL_PLUGINS: {named} is named like one of Veil's own schemas, which the "
                         "OpenAPI document would rename under every client: give the class a name of its own")
