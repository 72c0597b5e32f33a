"""Write-back: plan the [[actions]] of memwatch.toml, apply them to a source (explicitly),
and undo them from the before-images kept in the overlay."""
