"""What an audit or a sync does: read a source, categorise, score, persist, rescore, gate.

Also the operations on what the overlay knows (check an utterance, facts added through the
API, search, refresh/forget/gc, writing a memwatch.toml for a store)."""
