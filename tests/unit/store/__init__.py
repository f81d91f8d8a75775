"""Unit tests of services.store."""
