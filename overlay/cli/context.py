"""The one object every command gets: config, overlay, clock and console of this invocation.

The shared options (`options.py`) fill it while click parses the command line; a command
takes it with ``@pass_cli`` and asks it for what it needs, so no command loads a config,
parses ``--as-of`` or opens the overlay its own way.

Example:
    >>> cli = CliContext(as_of_text="2026-11-29")
    >>> cli.as_of
    1795910400.0
    >>> cli.config is None       # no --config given: zero-config defaults
    True
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

import click
from memwatch_overlay.overlay.output.console import OutputConsole as Console

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import Config, load_config

if TYPE_CHECKING:
    from memwatch_overlay.overlay.api import MemWatch
    from memwatch_overlay.overlay.store.database import OverlayStore

DEFAULT_CONFIG = "memwatch.toml"


@dataclass
class CliContext:
    """What a command needs from its command line, built once per invocation.

    ``config_path``, ``overlay_path`` and ``as_of_text`` are set by `--config`, `--overlay`
    and `--as-of`; everything else is derived on first use.
    """

    config_path: str | None = None
    overlay_path: str | None = None
    as_of_text: str | None = None
    quiet: bool = False             # -q: nothing on stderr but errors (no notes, warnings, progress)
    clock: Callable[[], float] = time.time
    _config: Config | None = field(default=None, repr=False)
    _closers: list = field(default_factory=list, repr=False)

    # -- config -------------------------------------------------------------------------
    @property
    def config(self) -> Config | None:
        """The --config file, loaded once; None without --config (zero-config defaults)."""
        if self._config is None and self.config_path:
            self._config = load_config(self.config_path)
        return self._config

    def config_or_default(self, why: str) -> Config:
        """--config, else ./memwatch.toml; a ConfigError naming --config (with `why`) when neither is there."""
        if self.config_path is None and Path(DEFAULT_CONFIG).is_file():
            self.config_path = DEFAULT_CONFIG
        if self.config_path is None:
            raise ConfigError(f"no memwatch.toml here; {why}", field="--config")
        config = self.config
        assert config is not None
        return config

    # -- clock --------------------------------------------------------------------------
    @property
    def as_of_given(self) -> float | None:
        """--as-of as epoch seconds, None when not given."""
        return None if self.as_of_text is None else parse_as_of(self.as_of_text)

    @property
    def as_of(self) -> float:
        """--as-of as epoch seconds, else now."""
        given = self.as_of_given
        return self.clock() if given is None else given

    # -- overlay ------------------------------------------------------------------------
    def open_store(self) -> "OverlayStore":
        """The overlay of --overlay / [overlay] / the default path, closed when the command ends."""
        from memwatch_overlay.overlay.engine.audit import open_overlay
        store = open_overlay(self.config, self.overlay_path)
        self._closers.append(store.close)
        return store

    def memwatch(self, subject: str | None = None) -> "MemWatch":
        """The Python API's MemWatch over this overlay (add, refresh, ... as the API does them),
        its clock at --as-of when given."""
        from memwatch_overlay.overlay.api import MemWatch
        from memwatch_overlay.overlay.engine.audit import overlay_target
        config = self.config
        given = self.as_of_given
        clock = self.clock if given is None else (lambda: given)
        return MemWatch(db=overlay_target(config, self.overlay_path), config=config, subject=subject, clock=clock)

    def require_overlay(self) -> None:
        """A ConfigError (exit 2) when the overlay file does not exist yet: a command that only
        reads the overlay must not create an empty one and report on it."""
        from memwatch_overlay.overlay.engine.audit import overlay_target
        from memwatch_overlay.overlay.store.postgres_dialect import is_dsn
        target = overlay_target(self.config, self.overlay_path)
        if not is_dsn(target) and not Path(target).exists():
            raise ConfigError(f"no overlay at {target} yet; make one with `memwatch-overlay audit STORE` "
                              "(or `daemon`, or `add KEY VALUE`), or point --overlay / --config at yours",
                              field="--overlay")

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()

    # -- output -------------------------------------------------------------------------
    @property
    def stdout(self) -> TextIO:
        return sys.stdout

    @property
    def stderr(self) -> TextIO:
        return sys.stderr

    def console(self, **kwargs) -> Console:
        """A rich console on stdout (rich picks colour and width from the terminal)."""
        return Console(**kwargs)

    def echo(self, text: str = "") -> None:
        click.echo(text)

    def warn(self, text: str) -> None:
        """A line on stderr (notes, warnings, gate lines); nothing with -q."""
        if not self.quiet:
            click.echo(text, err=True)

    def print_json(self, data, **kwargs) -> None:
        import json
        click.echo(json.dumps(data, indent=2, **kwargs))


def current(ctx: click.Context | None = None) -> CliContext:
    """This invocation's CliContext (made on first use and closed with the click context)."""
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, CliContext):
        root.obj = CliContext()
        root.call_on_close(root.obj.close)
    if ctx.obj is not root.obj:
        ctx.obj = root.obj
    return root.obj


def pass_cli(fn):
    """Give a command this invocation's CliContext as its first argument."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(current(), *args, **kwargs)
    return wrapper
