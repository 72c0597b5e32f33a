"""memwatch-overlay: freshness, expiry and contradiction tracking beside an agent's memory store."""

__version__ = "0.1.0"
