"""The overlay database: schema and migrations, the SQLite/Postgres dialect layer, and the
repositories (facts, contradictions, actions, leases, vectors, backups). SQL on the overlay
lives here and nowhere else."""
