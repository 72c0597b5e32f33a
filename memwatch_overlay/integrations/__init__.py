"""Wrappers that put memwatch-overlay inside agent frameworks (extras; import the one you use)."""
