"""`sitecustomize` files for what-if runs of gangsched (`--gangsched-sitecustomize FILE`).

Layer: bench. Each patches a library at interpreter start-up to test one hypothesis about where
gangsched's time goes, without editing `services/`; none is a fix to ship.
"""
