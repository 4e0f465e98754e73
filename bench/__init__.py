"""Benchmarks: each module is a script (``python bench/<name>.py``) printing medians; see bench/README.md."""
