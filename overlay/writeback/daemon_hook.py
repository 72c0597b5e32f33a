"""Write-back from the daemon: after a sync, plan and apply for sources with `apply = true`."""
from __future__ import annotations

from typing import Any, Callable

from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.writeback.apply import ApplyResult, apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.rules.config import Config, SourceConfig


def after_sync(store: OverlayStore, config: Config, source: SourceConfig,
               as_of: float | None = None, changed_only: bool = False) -> ApplyResult | None:
    """The daemon's hook, called after each sync of `source`.

    Plans that source's [[actions]] from the overlay it just synced, records annotations,
    and writes back only when the source has `apply = true`; writes of other sources stay
    in `held`. Rows skipped because the bot changed them are planned again next tick.
    """
    if not any(a.source in (None, source.name) for a in config.actions):
        return None
    plan = plan_actions(config, as_of, store=store, source_names=[source.name], sync=False,
                        changed_only=changed_only)
    return apply_plan(plan, store=store, write_sources={source.name} if source.apply else set())


def writeback_hook(config: Config) -> Callable[[Any], None]:
    """The callable a daemon appends to its `after_sync` hooks.

    It receives the daemon's event (duck-typed: `.kind`, `.source`, `.store`): after an
    incremental sync only that sync's changed facts are planned; after a full sync or a
    rescore (labels moved with time; `source` None means every source) all matching facts
    are, which also retries rows skipped earlier because the source was busy.
    """
    def hook(event) -> None:
        if event.kind == "deletions":
            return                      # deleted facts are not live: nothing new to plan
        sources = [event.source] if event.source is not None else list(config.sources)
        for source in sources:
            after_sync(event.store, config, source, changed_only=event.kind == "sync")
    return hook


