"""app.privacy is a pure library: importing all of it pulls in no web, database or queue code."""

import subprocess
import sys

FORBIDDEN = ("fastapi", "starlette", "sqlalchemy", "procrastinate", "psycopg", "alembic", "uvicorn")


def test_privacy_package_imports_no_service_layer():
    code = (
        "import sys\n"
        "from app.privacy import registry\n"
        "registry.load_all()\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"app.privacy imported: {out.stdout.strip()}"


def test_registry_is_not_empty_and_names_are_unique():
    from app.privacy import registry

    methods = registry.all_methods()
    names = [m.name for m in methods]
    assert "errph" in names
    assert len(names) == len(set(names))
