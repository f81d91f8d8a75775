"""NATS JetStream: connection, streams, publishing (Msg-Id), consuming (batches), embedded server.

Layer: infrastructure below the services. Imports contracts and config only; never imports a
service (watcher, planner, binder), the store or the Kubernetes client.
"""
