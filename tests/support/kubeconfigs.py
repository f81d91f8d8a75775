"""A kubeconfig for tests that point a Kubernetes client at a local server of their own."""

from __future__ import annotations

TOKEN_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}", insecure-skip-tls-verify: true}}
users:
- name: u
  user: {{token: "t0ken"}}
contexts:
- name: x
  context: {{cluster: c, user: u}}
current-context: x
"""
"""Token `t0ken`, TLS not verified; `.format(server=URL)` gives the text."""
