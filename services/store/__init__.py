"""State store: SQLAlchemy 2 async tables, engines, schema check and migrations, planner store.

Layer: infrastructure below the services. Imports contracts and config only; never imports a
service, the bus or the Kubernetes client. SQLite (WAL, BEGIN IMMEDIATE) and PostgreSQL
(asyncpg) behave the same through this package.
"""
