"""Process runtime: task supervision, graceful shutdown, health endpoints, Prometheus metrics.

Layer: infrastructure below the services. Imports contracts and config only; never imports a
service, the bus or the store.
"""
