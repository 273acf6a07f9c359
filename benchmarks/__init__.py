"""asides benchmarks: the peers side by side, memory and open time, the SQLite driver under Trio,
and the older store-write and compression benchmarks.

    python -m benchmarks [--quick] [peers|memory|drivers|writes|compression|all ...]

See docs/benchmarks.md for what each figure measures. The peers need the ``bench`` extra
(``pip install -e '.[bench]'``).
"""
