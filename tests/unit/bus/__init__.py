"""Unit tests of services.bus."""
