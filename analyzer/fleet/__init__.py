"""Many inputs at once: worker processes (`--jobs N`, pool) or tasks on a Dask cluster (`--dask`, cluster)."""
