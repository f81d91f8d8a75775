"""The only code that talks to the Kubernetes API server (docs/architecture.md).

Layer: kube, the only package importing kubernetes_asyncio. `client` (raw JSON requests and
watch streams), `listwatch` (informer-style observation for the watcher), `api` (the binder's
reads and writes: pods, bindings, nodes, PodGroup status, events), `errors` (our error tree).
Never imports the bus, the store, the planner or any service.
"""
