"""The options of every command that runs task scripts: their environment
(`script_env_options`) and their containment (`containment_options`), gathered in
`ScriptOptions`.

Interpreter layer (command line). `--script-env NAME` takes this process's value when the
option is parsed: a variable the allow-list leaves out, or one that carries a credential,
reaches scripts (and the daemon's bash tool) only so. `--containment full` or `container`
without root is refused as the options are parsed, before any command makes a folder;
`auto` (the default) is given on as no mode asked for. Click and the standard library only,
so that `--help` loads nothing that runs scripts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DEFAULT_TMP_SIZE", "containment_options", "script_env_options"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TMP_SIZE = 1 << 30
"""Each private `/tmp`'s size unless `--script-tmp-size` (`interpreters.real.runner.policy`)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _env_pairs(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for item in values:
        name, equals, value = item.partition("=")
        if not _ENV_NAME.match(name):
            raise click.BadParameter(f"{item!r} is not NAME=VALUE or NAME")
        if not equals:  # our own value, given on purpose (a credential, say)
            if name not in os.environ:
                raise click.BadParameter(f"{name} is not set in this environment")
            value = os.environ[name]
        pairs.append((name, value))
    return tuple(pairs)


def _bytes(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    text = value.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) <= 0:
        raise click.BadParameter(f"{value!r} is not a number of bytes (e.g. 2G, 512M)")
    return int(digits) * scale


def _mode(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """`full` and `container` only as root: a usage error otherwise, before anything is made
    (SPEC §5); `auto` is None, the default."""
    if value in ("full", "container") and os.geteuid() != 0:
        raise click.BadParameter(f"{value} containment needs root (run as root, or give weak)")
    return None if value == "auto" else value


def script_env_options(command: F) -> F:
    """`--script-env NAME=VALUE|NAME` (repeatable), `--clean-env`, `--script-memory BYTES`."""
    command = click.option(
        "--script-memory",
        callback=_bytes,
        help="Memory limit of each script, bytes (K/M/G suffixes).",
    )(command)
    command = click.option(
        "--clean-env",
        is_flag=True,
        help="Scripts get only PATH and the locale, not this environment.",
    )(command)
    return click.option(
        "--script-env",
        multiple=True,
        callback=_env_pairs,
        metavar="NAME=VALUE|NAME",
        help="Add or override a variable of the scripts' environment; NAME alone passes this "
        "environment's value, even of a variable the allow-list leaves out or that carries a "
        "credential (repeatable).",
    )(command)


def containment_options(command: F) -> F:
    """`--containment auto|full|container|weak`, `--script-network loopback|host`,
    `--script-tmp-size`."""
    command = click.option(
        "--script-tmp-size",
        callback=_bytes,
        metavar="BYTES",
        help=f"Size of each script's private /tmp, /var/tmp and /dev/shm (K/M/G suffixes; "
        f"default {DEFAULT_TMP_SIZE >> 30}G each).",
    )(command)
    command = click.option(
        "--script-network",
        type=click.Choice(["loopback", "host"]),
        default="loopback",
        show_default=True,
        help="Scripts' network: a namespace of their own with only loopback, or the host's.",
    )(command)
    return click.option(
        "--containment",
        type=click.Choice(["auto", "full", "container", "weak"]),
        callback=_mode,
        help="full: PID, mount and network namespaces, private /tmp, a pids cgroup, or no "
        "grading; container (as root in a container): the container is the boundary, one "
        "grading at a time, the runner's processes and /tmp files removed after each script; "
        "weak: own session and a sweep [default: auto: full as root where the kernel grants "
        "it, else container inside a container, else no grading; weak without root].",
    )(command)
