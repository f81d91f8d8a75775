"""Offline simulation: manifests played through the production planner on a simulated clock.

Layer: planner (pure; imports the planner core and contracts only). The CLI (`services/cli/
simulate.py`) reads the files, slims the objects into events and renders the result.
"""
