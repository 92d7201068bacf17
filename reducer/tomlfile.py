"""A small TOML writer (the standard library reads TOML but does not write it): for `case.toml`, whose
`bisect` table the versions write and the rest the corpus."""
from __future__ import annotations

import re

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(data: dict, _prefix: str = "") -> str:
    """TOML text for a dict of scalars, lists of scalars and nested dicts (written as tables)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for key, table in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        name = f"{_prefix}.{_toml_key(key)}" if _prefix else _toml_key(key)
        if lines:
            lines.append("")
        lines.append(f"[{name}]")
        body = dump_toml(table, name)
        if body:
            lines.append(body.rstrip("\n"))
    return "\n".join(lines) + "\n"
