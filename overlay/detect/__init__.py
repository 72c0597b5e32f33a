"""Contradiction detection: the pairwise detector, slot extraction and the slot pack, the
pass over a sync's changed facts block by block, and the optional embeddings and LLM judge."""
