"""Fit rules shared by the planner and the binder: kube-scheduler's filters for one pod on one
node, with their per-node reason wording.

Layer: just above contracts, below planner and binder. Pure: reads only contracts' types;
no I/O, no clock, no randomness. The planner runs these rules to place; the binder runs the
same rules again, on its own view, before it binds what a placement names.
"""
