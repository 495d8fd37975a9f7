"""kvconf: `key = value` configuration files with `include` directives."""

from kvconf.parser import ConfigError, load

__all__ = ["ConfigError", "load"]
