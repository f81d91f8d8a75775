"""Cluster benchmark: gangsched against kube-scheduler on the same KWOK cluster.

Layer: bench, outside `services`; it talks to the API server directly (aiohttp, admin token) so
the measurement does not depend on the code under test. Entry point: `python -m bench.cluster`
(see bench/README.md). Never imported by `services`.
"""
