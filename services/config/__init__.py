"""Settings of every service: each option is a CLI flag and a `GANGSCHED_*` environment variable.

Layer: config. Imports contracts and the planner's pure config only; never does I/O.
"""
