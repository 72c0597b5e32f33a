"""memwatch-overlay: freshness, expiry and contradiction tracking beside an agent's memory store.

    from memwatch_overlay import MemWatch, TTLConfig

The API is imported on first use, so the command line does not pay for it.
"""

from memwatch_overlay.core.version import __version__  # noqa: F401 (memwatch_overlay.__version__)
__all__ = ["MemWatch", "TTLConfig", "Memory", "CheckResult", "SuggestedUpdate"]


def __getattr__(name):
    if name in ("MemWatch", "TTLConfig", "Memory"):
        from memwatch_overlay.overlay import api
        return getattr(api, name)
    if name in ("CheckResult", "SuggestedUpdate"):
        from memwatch_overlay.overlay.engine import check
        return getattr(check, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
