"""gangsched: a gang ("all-or-nothing") scheduler for Kubernetes, as event-sourced services."""

__version__ = "0.1.0"
