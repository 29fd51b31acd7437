"""`veil openapi` and `veil docs`: the files generated from the code — the OpenAPI document and
the docs' methods index (app/docs_index.py) — or one method's page on stdout."""

from __future__ import annotations

import json
from pathlib import Path


def openapi_document() -> dict:
    from app.main import create_app

    return create_app().openapi()


def cmd_openapi(args) -> None:
    out = Path(args.output)
    document = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(document)
    except OSError as exc:
        raise SystemExit(f"veil openapi: cannot write {out}: {exc.strerror or exc}") from None
    print(f"wrote {out}")


def cmd_docs(args) -> None:
    from app.docs_index import render_page, write
    from app.privacy import registry

    if args.method is not None:  # any method's page, a VEIL_PLUGINS one's too, on stdout
        spec = registry.get(args.method)
        if spec is None:
            raise SystemExit(f"veil docs: no method named {args.method!r} (GET /v1/methods lists them)")
        print(render_page(spec), end="")
        return
    for path in write():
        print(f"wrote {path}")
    plugins = sorted(s.name for s in registry.all_methods() if registry.is_plugin(s.name))
    if plugins:
        print(f"left out the VEIL_PLUGINS methods ({', '.join(plugins)}): Veil's docs list its own; "
              "`veil docs --method NAME` prints the page of one")
