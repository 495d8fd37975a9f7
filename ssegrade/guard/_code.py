"""What a source file's syntax tree shows the guard: crash catchers, sanitizer hooks and
attributes, test-runner escapes, and the file's literal bytes.

Pure core. `read_code` reads one file's bytes in its language (`ssegrade.guard._syntax`) into
`Finding`s, each with a key that does not depend on where it is (so that `new_findings` keeps
what the file after the patch holds more of than before) and `literals`: string literals with
adjacent ones folded, byte and char arrays. Calls are matched by what they resolve to (an
import alias, a package renamed, C's own macros expanded); context decides (a `signal` of a
crash signal, not of `SIGCHLD`; a `recover()` whose function does not panic again; a broad
`except` that does not re-raise).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ssegrade.guard._imports import go_imports, py_imports, rust_uses
from ssegrade.guard._model import Kind
from ssegrade.guard._syntax import Node, expand_c, nodes, parse, text
from ssegrade.guard._tree_literals import ITEMS, STRINGS, byte_value, string_bytes

__all__ = ["CRASH_SIGNALS", "Finding", "Reading", "new_findings", "read_code"]

CRASH_SIGNALS = {"SIGSEGV": 11, "SIGBUS": 7, "SIGABRT": 6, "SIGFPE": 8, "SIGILL": 4, "SIGTRAP": 5}
"""The signals a crash raises, by name and (Linux) number."""
_CRASH_NUMBERS = {str(n) for n in CRASH_SIGNALS.values()} | {"SIGIOT"}

_SIGNAL_CALLS = {"signal", "bsd_signal", "sysv_signal", "__sysv_signal", "sigset", "sigaction"}
_RT_SIGACTION = {"SYS_rt_sigaction", "__NR_rt_sigaction", "SYS_sigaction", "__NR_sigaction", "13"}
_HOOK_DEFS = re.compile(
    r"^__(?:asan|ubsan|lsan|msan|tsan|hwasan)_default_(?:options|suppressions)$|^__lsan_"
    r"|^__asan_on_error$|^__sanitizer_(?:report_error_summary|on_print)$"
)
_HOOK_CALLS = re.compile(
    r"^__sanitizer_set_(?:death_callback|report_path|report_fd)$|^__asan_set_(?:error_report_"
    r"callback|death_callback|on_error)$|^__lsan_|^__ubsan_set_"
)
_NO_SANITIZE = re.compile(
    r"no_sanitize|no_address_safety_analysis|disable_sanitizer_instrumentation"
    r"|\bsanitize\s*\([^)]*=\s*\"off\""
)
_CATCHERS = {"set_terminate", "SetUnhandledExceptionFilter", "AddVectoredExceptionHandler"}
_BROAD = {"Exception", "BaseException", "builtins.Exception", "builtins.BaseException"}


@dataclass(frozen=True, slots=True)
class Finding:
    """A pattern a file's code holds: its kind, a key saying what (not where), its line."""

    kind: Kind
    key: str
    line: int


@dataclass(slots=True)
class Reading:
    """What a file's code holds: the findings, and its literals' bytes."""

    findings: list[Finding] = field(default_factory=list)
    literals: set[bytes] = field(default_factory=set)

    def add(self, kind: Kind, key: str, node: Node) -> None:
        """Record a finding at `node`'s line."""
        self.findings.append(Finding(kind, key, node.start_point[0] + 1))


def new_findings(before: Reading | None, after: Reading) -> list[Finding]:
    """The findings `after` holds more of than `before` (each key counted)."""
    left = Counter(f.key for f in before.findings) if before is not None else Counter[str]()
    out = []
    for finding in after.findings:
        if left[finding.key] > 0:
            left[finding.key] -= 1
        else:
            out.append(finding)
    return out


def _literals(root: Node, reading: Reading, prune: Callable[[Node], bool] | None) -> None:
    """Record the code's literals: strings (adjacent ones, or Go's `"a" + "b"`, folded) and
    arrays of bytes or chars (`{'A', 0x41}`, `[0xff, 0x00]`)."""
    for node in nodes(root, prune):
        kind = node.type
        if kind == "concatenated_string" or (
            kind in STRINGS
            and node.parent is not None
            and node.parent.type != "concatenated_string"
        ):
            parts = node.named_children if kind == "concatenated_string" else [node]
            reading.literals.add(b"".join(string_bytes(p) for p in parts if p.type in STRINGS))
        elif (
            kind == "binary_expression"
            and all(c.type in STRINGS for c in node.named_children)
            and text(node.child_by_field_name("operator") or node).strip() in ("+", text(node))
        ):
            reading.literals.add(b"".join(string_bytes(c) for c in node.named_children))
        elif kind in ("initializer_list", "literal_value", "array_expression", "list"):
            items = [c for c in node.named_children if c.type != "comment"]
            values = [byte_value(c) if c.type in ITEMS else None for c in items]
            if len(values) >= 2 and all(v is not None for v in values):
                reading.literals.add(bytes(v for v in values if v is not None))


def _name(node: Node | None) -> str:
    """The last name of a callee: `std::signal` → `signal`, `p.x` → `x`."""
    if node is None:
        return ""
    return re.split(r"::|\.", text(node).strip().lstrip(":"))[-1]


def _args(call: Node) -> list[Node]:
    arguments = call.child_by_field_name("arguments")
    return [] if arguments is None else [a for a in arguments.named_children if a.type != "comment"]


def _signal(node: Node | None) -> str | None:
    """A crash signal an argument names (`SIGSEGV`, `libc::SIGSEGV`, `11`), '?' when it
    names none that can be read, or None when it names another signal."""
    if node is None:
        return "?"
    name = _name(node)
    if name in CRASH_SIGNALS or name in _CRASH_NUMBERS:
        return name
    if re.fullmatch(r"SIG[A-Z0-9]+|\d+", name):
        return None
    return "?"


def _folded(node: Node) -> str:
    """An argument's text with adjacent string literals joined (`"ASAN_" "OPTIONS"`)."""
    return re.sub(r'"\s*"', "", text(node))


def _crash_call(
    reading: Reading, node: Node, name: str, args: list[Node], crash_named: bool
) -> None:
    if name in _SIGNAL_CALLS:
        sig = _signal(args[0] if args else None)
        if sig == "?" and not crash_named:
            return
        if sig is not None:
            reading.add("crash-handler", f"{name}({sig})", node)
    elif name == "syscall" and args and _name(args[0]) in _RT_SIGACTION:
        sig = _signal(args[1] if len(args) > 1 else None)
        if sig is not None:
            reading.add("crash-handler", f"syscall(rt_sigaction, {sig})", node)
    elif name in _CATCHERS:
        reading.add("crash-handler", name, node)


def _read_c(root: Node, reading: Reading, crash_named: bool) -> None:
    for node in nodes(root):
        kind = node.type
        if kind == "call_expression":
            name = _name(node.child_by_field_name("function"))
            args = _args(node)
            _crash_call(reading, node, name, args, crash_named)
            if _HOOK_CALLS.search(name):
                reading.add("sanitizer", f"call {name}", node)
            if name in ("setenv", "putenv") and args and "SAN_OPTIONS" in _folded(args[0]):
                reading.add("sanitizer", f"{name} sanitizer options", node)
        elif kind == "function_declarator":
            name = _name(node.child_by_field_name("declarator"))
            if _HOOK_DEFS.search(name) and node.parent is not None:
                reading.add("sanitizer", f"defines {name}", node)
        elif kind in ("attribute_specifier", "attribute_declaration", "ms_declspec_modifier"):
            if _NO_SANITIZE.search(text(node)):
                reading.add("sanitizer", f"attribute {text(node)[:60]}", node)
        elif kind == "preproc_call" and _NO_SANITIZE.search(text(node)):
            reading.add("sanitizer", f"pragma {text(node)[:60]}", node)
        elif kind == "catch_clause" and "..." in text(node.child(1) or node)[:20]:  # noqa: SIM102
            if "throw" not in text(node.child_by_field_name("body") or node):
                reading.add("crash-handler", "catch (...) without rethrow", node)


def _enclosing(node: Node, types: tuple[str, ...]) -> Node | None:
    parent = node.parent
    while parent is not None and parent.type not in types:
        parent = parent.parent
    return parent


def _resolved(callee: Node | None, aliases: dict[str, str], sep: str) -> str:
    if callee is None:
        return ""
    parts = re.split(r"::|\.", text(callee).strip())
    head = aliases.get(parts[0])
    return sep.join([head, *parts[1:]] if head is not None else parts)


class _Bodies:
    """Whether a function's text matches a pattern, each function read once per pattern (a
    file of many calls in one huge function costs its size, not its size times the calls)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int, str], bool] = {}

    def hold(self, node: Node | None, pattern: str) -> bool:
        """Whether `node`'s text (None: no function) matches `pattern`."""
        if node is None:
            return False
        key = (node.start_byte, node.end_byte, pattern)
        if key not in self.seen:
            self.seen[key] = re.search(pattern, text(node)) is not None
        return self.seen[key]


def _read_go(root: Node, reading: Reading, path: str) -> None:
    aliases = go_imports(root)
    bodies = _Bodies()
    for node in nodes(root):
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            name = _resolved(callee, aliases, ".")
            args = _args(node)
            if name == "recover":
                body = _enclosing(
                    node, ("func_literal", "function_declaration", "method_declaration")
                )
                if not bodies.hold(body, r"\bpanic\s*\("):
                    reading.add("crash-handler", "recover() not panicking again", node)
            elif name == "runtime/debug.SetPanicOnFault":
                reading.add("crash-handler", name, node)
            elif name in ("os/signal.Notify", "os/signal.Ignore"):
                if any(_name(a) in CRASH_SIGNALS for a in args) or re.search(
                    r"Signal\((?:11|7|6|8|4|5)\)", text(node)
                ):
                    reading.add("crash-handler", f"{name} of a crash signal", node)
            elif name in ("os.Exit", "syscall.Exit") and not path.endswith("_test.go"):
                func = _enclosing(node, ("function_declaration",))
                if func is not None and text(func.child_by_field_name("name") or func) == "init":
                    reading.add("tests", "init() exits", node)
        elif node.type == "function_declaration":
            if text(node.child_by_field_name("name") or node) == "TestMain":
                reading.add("tests", "TestMain", node)
        elif node.type == "comment" and re.match(r"//\s*(?:go:build|\+build)\b", text(node)):
            reading.add("tests", f"build constraint {text(node)[:60]}", node)


_RUST_TEST = re.compile(r"^#\[(?:cfg\(test\)|(?:\w+::)*test)\]$")


def rust_test(node: Node) -> bool:
    """Whether `node` is a Rust item only tests build: a `#[cfg(test)]` module or item, a
    `#[test]` function (a regression test may hold the PoC and catch its panic)."""
    if node.type not in ("mod_item", "function_item", "impl_item", "const_item", "static_item"):
        return False
    before = node.prev_named_sibling
    while before is not None and before.type == "attribute_item":
        if _RUST_TEST.match(re.sub(r"\s+", "", text(before))):
            return True
        before = before.prev_named_sibling
    return False


def _read_rust(root: Node, reading: Reading, crash_named: bool) -> None:
    aliases = rust_uses(root)
    bodies = _Bodies()
    for node in nodes(root, rust_test):
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            name = _resolved(callee, aliases, "::").removeprefix("::")
            short = "::".join(name.split("::")[-2:])
            if short == "panic::catch_unwind" or (
                callee is not None
                and callee.type == "field_expression"
                and name.endswith("catch_unwind")
            ):
                func = _enclosing(node, ("function_item",))
                if not bodies.hold(func, r"resume_unwind|panic!"):
                    reading.add("crash-handler", "catch_unwind not panicking again", node)
            elif short == "panic::set_hook":
                if "abort" not in text(node):
                    reading.add("crash-handler", "panic::set_hook without abort", node)
            else:
                _crash_call(reading, node, name.rsplit("::", 1)[-1], _args(node), crash_named)
        elif node.type in ("attribute_item", "inner_attribute_item") and _NO_SANITIZE.search(
            text(node)
        ):
            reading.add("sanitizer", f"attribute {text(node)[:60]}", node)


def _broad(node: Node | None, aliases: dict[str, str]) -> bool:
    if node is None:
        return True
    if node.type == "as_pattern":
        node = node.named_children[0] if node.named_children else None
        return _broad(node, aliases)
    if node.type in ("tuple", "parenthesized_expression", "expression_list"):
        return any(_broad(c, aliases) for c in node.named_children)
    return _resolved(node, aliases, ".") in _BROAD


def _read_python(root: Node, reading: Reading) -> None:
    aliases = py_imports(root)
    hooks = {"sys.excepthook", "threading.excepthook", "sys.unraisablehook"}
    for node in nodes(root):
        if node.type == "except_clause":
            kinds = [c for c in node.named_children if c.type not in {"block", "comment"}]
            block = next((c for c in node.named_children if c.type == "block"), None)
            swallowed = block is None or not any(n.type == "raise_statement" for n in nodes(block))
            if _broad(kinds[0] if kinds else None, aliases) and swallowed:
                scope = _enclosing(node, ("function_definition",))
                where = text(scope.child_by_field_name("name") or scope) if scope else "<module>"
                what = text(kinds[0]) if kinds else "bare"
                reading.add("crash-handler", f"except {what} in {where} not re-raising", node)
        elif node.type == "assignment":
            target = node.child_by_field_name("left")
            if target is not None and _resolved(target, aliases, ".") in hooks:
                reading.add("crash-handler", f"replaces {_resolved(target, aliases, '.')}", node)
        elif node.type == "call":
            name = _resolved(node.child_by_field_name("function"), aliases, ".")
            args = _args(node)
            if name == "setattr" and len(args) > 1 and "excepthook" in text(args[1]):
                reading.add("crash-handler", "replaces an excepthook", node)
            elif name in ("signal.signal", "faulthandler.register"):
                sig = _signal(args[0] if args else None)
                if sig not in (None, "?"):
                    reading.add("crash-handler", f"{name}({sig})", node)


def _crash_named(data: bytes) -> bool:
    """Whether code names a crash signal anywhere (a `signal(sig, …)` of a variable then
    counts)."""
    return any(name.encode() in data for name in CRASH_SIGNALS)


def read_code(language: str, path: str, data: bytes) -> Reading:
    """What `data`, the code of `path` in `language`, holds (see the module's docstring)."""
    reading = Reading()
    if language in ("c", "cpp"):
        expanded = expand_c(language, data)
        root = parse(language, expanded)
        _read_c(root, reading, _crash_named(expanded))
    else:
        root = parse(language, data)
        if language == "go":
            _read_go(root, reading, path)
        elif language == "rust":
            _read_rust(root, reading, _crash_named(data))
        else:
            _read_python(root, reading)
    _literals(root, reading, rust_test if language == "rust" else None)
    return reading
