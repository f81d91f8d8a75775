"""Re-derivation: rebuild the planner's state from a recorded log and re-plan at its plan points.

Layer: planner (pure: the planner core and contracts only; no I/O, no clock). `rounds` turns
a log (events, plan points, recorded decisions, from any source) into rounds as the live
planner ran them; `replay` applies each round's events and plans at its plan point with the
production core; `verify` compares the re-derived decisions with the recorded ones byte for
byte. The planner's restart catch-up (`services.planner.catchup`) and `gangsched replay
--verify` (`services.audit`, `services.cli.replaying`) both run on it, so a restart and an audit
derive decisions the same way.
"""
