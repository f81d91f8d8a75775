"""Unit tests of services.runtime."""
