"""Everything a person or a CI job reads: terminal tables, report formats, publishing."""
