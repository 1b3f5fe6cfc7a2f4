"""The scenario reference as Markdown, rendered from the core's JSON Schema (``lasthop schema
--markdown``; ``docs/scenario-reference.md`` is this output, checked by a test).

Sections are named by where a table sits in a scenario file (``aps[].last_hop``, ``flows[]`` with
``type = "tcp"``), not by the Rust type behind it; each table is described once, where it first
appears, and later places point there.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["markdown"]

Node = dict[str, Any]


class _Doc:
    def __init__(self, schema: Node) -> None:
        self.defs: dict[str, Node] = schema.get("$defs", {})
        self.placed: dict[str, str] = {}
        self.out: list[str] = []

    def resolve(self, node: Node) -> tuple[Node, str | None]:
        """The node behind ``$ref`` / ``allOf: [$ref]`` / ``anyOf: [X, null]`` and the definition's name."""
        name = None
        while True:
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                node = self.defs[name]
            elif len(node.get("allOf", [])) == 1:
                node = node["allOf"][0]
            elif "anyOf" in node and len(node["anyOf"]) == 2 and {"type": "null"} in node["anyOf"]:
                node = next(n for n in node["anyOf"] if n != {"type": "null"})
            else:
                return node, name

    def variants(self, node: Node) -> list[tuple[str, Node]] | None:
        """A `type`-tagged union's variants as (tag, object), or ``None``."""
        alts = node.get("oneOf") or node.get("anyOf")
        if not alts:
            return None
        out = []
        for alt in alts:
            alt, _ = self.resolve(alt)
            tag = alt.get("properties", {}).get("type", {})
            value = tag.get("const", (tag.get("enum") or [None])[0])
            if not isinstance(value, str):
                return None
            out.append((value, alt))
        return out

    def kind(self, node: Node) -> str:
        """A short type for a field table."""
        inner, _ = self.resolve(node)
        optional = "anyOf" in node and {"type": "null"} in node["anyOf"]
        alts: list[Node] = inner.get("oneOf") or inner.get("anyOf") or []
        if "enum" in inner and all(isinstance(v, str) for v in inner["enum"]):
            text = " \\| ".join(f'`"{v}"`' for v in inner["enum"])
        elif alts and all("const" in a or "enum" in a for a in alts):
            text = " \\| ".join(f'`"{a.get("const", (a.get("enum") or [""])[0])}"`' for a in alts)
        elif inner.get("type") == "array":
            text = f"list of {self.kind(inner.get('items', {}))}"
        elif self.variants(inner) is not None or inner.get("type") == "object" or "properties" in inner:
            text = "table"
        else:
            t = inner.get("type", "any")
            text = " or ".join(t) if isinstance(t, list) else str(t)
        return text + (" (optional)" if optional else "")

    def section(self, path: str, node: Node, level: int) -> None:
        node, name = self.resolve(node)
        if node.get("type") == "array":
            self.section(path + "[]", node.get("items", {}), level)
            return
        variants = self.variants(node)
        if variants is None and "properties" not in node:
            return
        if name is not None and name in self.placed:
            return
        if name is not None:
            self.placed[name] = path
        self.out.append(f"\n{'#' * level} `{path}`\n")
        if node.get("description"):
            self.out.append(node["description"].strip() + "\n")
        if variants is not None:
            for tag, alt in variants:
                self.out.append(f"\n{'#' * (level + 1)} `{path}` with `type = \"{tag}\"`\n")
                if alt.get("description"):
                    self.out.append(alt["description"].strip() + "\n")
                self.fields(path, alt, level + 2, skip="type")
            return
        self.fields(path, node, level + 1)

    def fields(self, path: str, node: Node, level: int, skip: str | None = None) -> None:
        props = {k: v for k, v in node.get("properties", {}).items() if k != skip}
        if not props:
            return
        required = set(node.get("required", []))
        self.out.append("\n| key | type | default | meaning |\n|---|---|---|---|")
        nested = []
        for key, prop in props.items():
            default = "required" if key in required else (f"`{json.dumps(prop['default'])}`" if "default" in prop else "")
            text = (prop.get("description") or self.resolve(prop)[0].get("description") or "").replace("\n", " ").replace("|", "\\|")
            inner, name = self.resolve(prop)
            where = self.placed.get(name) if name else None
            if where is not None:
                text += f" (see `{where}`)"
            self.out.append(f"| `{key}` | {self.kind(prop)} | {default} | {text} |")
            nested.append((f"{path}.{key}" if path else key, prop))
        for sub, prop in nested:
            self.section(sub, prop, min(level, 4))


def markdown(schema: Node) -> str:
    """The reference of every scenario key: type, default and meaning, table by table."""
    doc = _Doc(schema)
    doc.out.append("# Scenario reference\n")
    doc.out.append("Generated from the core's JSON Schema by `lasthop schema --markdown`; "
                   "`lasthop schema` prints the schema itself. Every key is optional unless its default says *required*.\n")
    doc.out.append("\n## Top level\n")
    doc.fields("", schema, 3)
    return "\n".join(doc.out).rstrip() + "\n"
