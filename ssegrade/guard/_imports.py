"""What names a source file's imports bind, so that a call is matched by what it resolves to
(`p::set_hook` after `use std::panic as p`, `s.excepthook` after `import sys as s`).

Pure core, under `ssegrade.guard._code`.
"""

from __future__ import annotations

import re

from ssegrade.guard._syntax import Node, nodes, text

__all__ = ["go_imports", "py_imports", "rust_uses"]


def go_imports(root: Node) -> dict[str, str]:
    """Go: each imported package's name (its alias, else its last element) → its path."""
    names: dict[str, str] = {}
    for node in nodes(root):
        if node.type == "import_spec":
            path = text(node.child_by_field_name("path") or node).strip('"`')
            alias = node.child_by_field_name("name")
            names[text(alias) if alias is not None else path.rsplit("/", 1)[-1]] = path
    return names


def rust_uses(root: Node) -> dict[str, str]:
    """Rust: each name a `use` brings in (`p` of `use std::panic as p`) → its full path."""
    names: dict[str, str] = {}

    def tree(prefix: str, spec: str) -> None:
        spec = spec.strip()
        group = re.fullmatch(r"(.*?)::\{(.*)\}", spec, re.DOTALL)
        if group is not None:
            inner = f"{prefix}{group.group(1)}::"
            depth, start = 0, 0
            body = group.group(2)
            for i, char in enumerate(body + ","):
                depth += char == "{"
                depth -= char == "}"
                if char == "," and depth == 0:
                    tree(inner, body[start:i])
                    start = i + 1
            return
        full, _, alias = spec.partition(" as ")
        full = (prefix + full.strip()).removesuffix("::self")
        if full:
            names[alias.strip() or full.rsplit("::", 1)[-1]] = full

    for node in nodes(root):
        if node.type == "use_declaration":
            argument = node.child_by_field_name("argument")
            if argument is not None:
                tree("", re.sub(r"\s+", " ", text(argument)).replace(" ::", "::"))
    return names


def py_imports(root: Node) -> dict[str, str]:
    """Python: each name an import binds in the file → the module or name it stands for."""
    names: dict[str, str] = {}
    for node in nodes(root):
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    alias = child.child_by_field_name("alias")
                    names[text(alias)] = text(child.child_by_field_name("name") or child)
                else:
                    names[text(child).split(".")[0]] = text(child).split(".")[0]
        elif node.type == "import_from_statement":
            module = text(node.child_by_field_name("module_name") or node)
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    alias = child.child_by_field_name("alias")
                    source = text(child.child_by_field_name("name") or child)
                    names[text(alias)] = f"{module}.{source}"
                else:
                    names[text(child)] = f"{module}.{text(child)}"
    return names
