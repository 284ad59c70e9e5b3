"""The generated types and operations (src/quotegate_client/schema.py) are what the served /openapi.json generates:
a contract change without `npm run client:generate` fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def test_schema_py_is_generated_from_the_served_openapi_document(base_url: str) -> None:
    spec = importlib.util.spec_from_file_location("qg_generate", ROOT / "scripts" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    document = httpx.get(f"{base_url}/openapi.json", timeout=30).json()
    expected = generate.Generator(document).render()
    assert (ROOT / "src" / "quotegate_client" / "schema.py").read_text(encoding="utf-8") == expected, (
        "schema.py is out of date: run `npm run client:generate` at the repository root"
    )
