"""What every in-process wrapper (integrations/langgraph.py, integrations/mem0.py) holds to watch
the memories passing through it: the config, the overlay, a sync engine with the detector, and the
``native`` source its records are filed under."""

from __future__ import annotations

from memwatch_overlay.overlay.detect.blocks import make_detector
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import Config, SourceConfig, load_config


class OverlayWatcher:
    """Mixin: ``_open_overlay(...)`` opens the overlay; ``close()`` closes it."""

    config: Config
    overlay: OverlayStore
    engine: SyncEngine
    source: SourceConfig

    def _open_overlay(self, db: str, config: str | Config | None, source: str, preset: str, path: str) -> None:
        self.config = config if isinstance(config, Config) else (load_config(config) if config else Config())
        self.overlay = OverlayStore(db)
        self.engine = SyncEngine(self.overlay, self.config, detector=make_detector(self.config))
        self.source = SourceConfig(name=source, connector="native", preset=preset, path=path)

    def close(self) -> None:
        self.overlay.close()
