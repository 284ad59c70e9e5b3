#!/usr/bin/env python3
"""Writes src/quotegate_client/schema.py from the service's OpenAPI document (standard library only).

Usage: ``python3 scripts/generate.py [SOURCE] [--check]``. SOURCE is a file or an http(s) URL of /openapi.json;
default ``../typescript/openapi.json`` (the copy the TypeScript client keeps, checked against the served document by
test/unit/client-types.test.ts; ``npm run client:generate`` at the repository root writes both). ``--check`` writes
nothing and exits 1 when the file on disk differs from what SOURCE generates. tests/test_schema_current.py checks
the file against the served /openapi.json.

What it writes:

- one ``TypedDict`` per ``components.schemas`` entry (and per object schema nested inside one, named after its
  place: ``ErrorEnvelopeError``), fields in the document's order; a property outside ``required`` is
  ``NotRequired``; ``type: [..., "null"]`` and ``anyOf`` with null are ``X | None``; ``enum`` and ``const`` are
  ``Literal``; a map (``additionalProperties`` with a schema) is ``dict[str, X]``; JSON numbers are ``float`` and
  integers ``int`` (amounts are decimal strings in the contract, so they stay ``str``);
- class ``Operations``: one method per REST operation whose 200 answer is JSON (the live stream and the export,
  whose handling is more than one call, are written by hand in client.py), named after its operationId in
  snake_case, with its path parameters positional, its query parameters keyword-only (``from`` as ``from_``) and
  its JSON body as ``body``; it returns the answer's ``data`` (the envelope's ``meta`` goes to ``self.meta``) or,
  for an operation without the envelope, the answer itself.
"""
from __future__ import annotations

import json
import keyword
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
TARGET = HERE / "src" / "quotegate_client" / "schema.py"
DEFAULT_SOURCE = HERE.parent / "typescript" / "openapi.json"
#: Operations client.py implements by hand (event stream; ETag-aware download of a large file).
HAND_WRITTEN = {"subscribePriceChanges", "exportPrices"}


def pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", text) if part)


def snake(text: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", text).lower()


def py_name(text: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", text)
    return name + "_" if keyword.iskeyword(name) else name


def literal(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def docstring(text: str, indent: str) -> list[str]:
    """`text` as a docstring's lines at `indent` (backslashes and triple quotes escaped; one line when it fits)."""
    body = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{body}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{line}".rstrip() for line in lines[1:]], f'{indent}"""']


def comment_lines(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    return [f"{indent}#: {line}".rstrip() for line in text.splitlines()]


class Generator:
    def __init__(self, doc: dict[str, Any]):
        self.doc = doc
        self.schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
        self.blocks: list[str] = []  # class texts, in the order they are made
        self.made: set[str] = set()
        self.functional: list[str] = []  # TypedDicts whose field names are not identifiers: emitted last

    # -- types ---------------------------------------------------------------------------------------------
    def type_of(self, schema: dict[str, Any], name: str) -> str:
        """The annotation of `schema`; an object schema with properties becomes a TypedDict named `name`."""
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        if "const" in schema:
            return f"Literal[{literal(schema['const'])}]"
        if "enum" in schema:
            values = [v for v in schema["enum"] if v is not None]
            out = f"Literal[{', '.join(literal(v) for v in values)}]"
            return f"{out} | None" if None in schema["enum"] else out
        for key in ("anyOf", "oneOf"):
            if key in schema:
                parts: list[str] = []
                nullable = False
                for i, sub in enumerate(schema[key]):
                    if sub.get("type") == "null":
                        nullable = True
                        continue
                    part = self.type_of(sub, f"{name}{i + 1}" if len(schema[key]) > 2 else name)
                    if part not in parts:
                        parts.append(part)
                if nullable:
                    parts.append("None")
                return " | ".join(parts) if parts else "Any"
        t = schema.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if k != "null"]
            inner = self.type_of({**schema, "type": kinds[0]} if len(kinds) == 1 else {**schema, "type": None, "anyOf": [{"type": k} for k in kinds]}, name) if kinds else "None"
            return f"{inner} | None" if "null" in t else inner
        if t == "string":
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "null":
            return "None"
        if t == "array":
            return f"list[{self.type_of(schema.get('items', {}), name + 'Item')}]"
        if t == "object" or "properties" in schema:
            if schema.get("properties"):
                self.typed_dict(name, schema)
                return name
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return f"dict[str, {self.type_of(extra, name + 'Value')}]"
            return "dict[str, Any]"
        return "Any"

    def typed_dict(self, name: str, schema: dict[str, Any]) -> None:
        if name in self.made:
            return
        self.made.add(name)
        required = set(schema.get("required", []))
        fields: list[tuple[str, str, str | None]] = []
        for prop, sub in schema["properties"].items():
            t = self.type_of(sub, name + pascal(prop))
            fields.append((prop, t if prop in required else f"NotRequired[{t}]", sub.get("description")))
        doc = str(schema.get("description") or f"The {name} object of the contract.")
        if all(p.isidentifier() and not keyword.iskeyword(p) for p, _, _ in fields):
            lines = [f"class {name}(TypedDict):", *docstring(doc, "    "), ""]
            for prop, t, desc in fields:
                lines += comment_lines(desc, "    ")
                lines.append(f"    {prop}: {t}")
            self.blocks.append("\n".join(lines))
        else:
            # A field named like a Python keyword (`from`): the functional form, evaluated after every class.
            lines = [f"{name} = TypedDict(", f"    {json.dumps(name)},", "    {"]
            for prop, t, desc in fields:
                lines += comment_lines(desc, "        ")
                lines.append(f"        {json.dumps(prop)}: {t!r},")
            lines += ["    },", ")", f"{name}.__doc__ = {doc!r}"]
            self.functional.append("\n".join(lines))

    # -- operations ----------------------------------------------------------------------------------------
    def operations(self) -> list[str]:
        methods: list[str] = []
        for path, item in self.doc.get("paths", {}).items():
            for method, op in item.items():
                if method not in ("get", "post", "put", "patch", "delete") or op.get("operationId") in HAND_WRITTEN:
                    continue
                content = op.get("responses", {}).get("200", {}).get("content", {})
                if "application/json" not in content:
                    continue
                methods.append(self.operation(path, method.upper(), op, content["application/json"].get("schema", {})))
        return methods

    def operation(self, path: str, method: str, op: dict[str, Any], answer: dict[str, Any]) -> str:
        op_id = op["operationId"]
        fname = snake(op_id)
        resolved = self.schemas.get(answer["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in answer else answer
        envelope = set(resolved.get("properties", {})) == {"data", "meta"}
        returns = self.type_of(resolved["properties"]["data"], pascal(op_id) + "Data") if envelope else self.type_of(answer, pascal(op_id) + "Out")
        documented: list[str] = []
        positional: list[str] = []
        keywords: list[str] = []
        path_args: list[str] = []
        query_args: list[tuple[str, str]] = []
        for p in op.get("parameters", []):
            if p["in"] not in ("path", "query"):
                continue
            arg = py_name(p["name"])
            t = self.type_of(p.get("schema", {}), pascal(op_id) + pascal(p["name"]))
            described = p.get("description") or p.get("schema", {}).get("description")
            if described:
                documented.append(f"`{arg}`: {described}")
            if p["in"] == "path":
                positional.append(f"{arg}: {t}")
                path_args.append(f"{json.dumps(p['name'])}: {arg}")
            elif p.get("required"):
                keywords.append(f"{arg}: {t}")
                query_args.append((p["name"], arg))
            else:
                keywords.append(f"{arg}: {t} | None = None")
                query_args.append((p["name"], arg))
        body = op.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            keywords.insert(0, f"body: {self.type_of(body.get('schema', {}), pascal(op_id) + 'In')}")
        args = ["self", *positional] + (["*", *keywords] if keywords else [])
        x = op.get("x-quotegate", {})
        cost = x.get("credit_cost")
        limit = x.get("rate_limit")
        billing = (f"{cost} credit{'s' if cost != 1 else ''}" if cost else "free") + (
            f", {limit['max_requests']} per {limit['window_seconds']} s" if limit else ""
        )
        head = f"{method} {path} ({op_id}: {billing})"
        text = f"{op['summary']}: {head}." if op.get("summary") else f"{head}."
        for part in (op.get("description"), "\n".join(documented)):
            if part:
                text += "\n\n" + part.strip()
        lines = [f"    def {fname}({', '.join(args)}) -> {returns}:", *docstring(text, "        ")]
        query = "{" + ", ".join(f"{json.dumps(n)}: {a}" for n, a in query_args) + "}"
        call = f"self._call({json.dumps(method)}, {json.dumps(path)}, path_params={{{', '.join(path_args)}}}, query={query}"
        call += ", body=body" if body is not None else ""
        call += f", envelope={envelope})"
        lines.append(f"        return {call}  # type: ignore[no-any-return]")
        return "\n".join(lines)

    # -- file ----------------------------------------------------------------------------------------------
    def render(self) -> str:
        aliases: list[str] = []
        for name, schema in self.schemas.items():
            if schema.get("properties"):
                self.typed_dict(name, schema)
            else:  # an alias (a union, a list, a map): an object inside it is named `<name>Object`
                aliases.append(f"{name} = {self.type_of(schema, name + 'Object')}")
        methods = self.operations()
        info = self.doc.get("info", {})
        names = sorted(self.made | {n for n in self.schemas} | {"Operations"})
        out = [
            f'"""Types and REST operations of the Quotegate API {info.get("version", "")}'.rstrip() + ", generated from its /openapi.json.",
            "",
            "Generated by clients/python/scripts/generate.py (npm run client:generate at the repository root). Do not edit.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "from typing import Any, Literal, NotRequired, TypedDict",
            "",
            "__all__ = [",
            *[f"    {json.dumps(n)}," for n in names],
            "]",
            "",
            "",
            "\n\n\n".join(self.blocks),
            "",
            "",
        ]
        if self.functional:
            out += ["\n\n".join(self.functional), "", ""]
        if aliases:
            out += ["\n".join(aliases), "", ""]
        out += [
            "class Operations:",
            '    """One method per REST operation with a JSON answer; QuotegateClient supplies `_call`."""',
            "",
            "    def _call(self, method: str, route: str, *, path_params: dict[str, Any], query: dict[str, Any], body: Any = None, envelope: bool) -> Any:",
            "        raise NotImplementedError",
            "",
            "\n\n".join(methods),
            "",
        ]
        return "\n".join(out)


def load(source: str) -> dict[str, Any]:
    if re.match(r"^https?://", source):
        with urllib.request.urlopen(source, timeout=30) as r:
            doc: dict[str, Any] = json.load(r)
            return doc
    parsed: dict[str, Any] = json.loads(Path(source).read_text(encoding="utf-8"))
    return parsed


def main(argv: list[str]) -> int:
    check = "--check" in argv
    sources = [a for a in argv if a != "--check"]
    text = Generator(load(sources[0] if sources else str(DEFAULT_SOURCE))).render()
    if check:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date: run python3 clients/python/scripts/generate.py (or npm run client:generate)", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
