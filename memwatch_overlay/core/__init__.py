"""The leaf of the package: errors, time parsing, redaction, fast JSON and the one vocabulary.

Everything else (rules/, connectors/, overlay/) may import from here; nothing here imports
any of them, so these modules can never take part in an import cycle.
"""
