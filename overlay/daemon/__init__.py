"""The sidecar: the daemon loop beside a running bot (watch, poll, sync, rescore) and its logs."""
