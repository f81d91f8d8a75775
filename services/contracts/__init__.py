"""Message contracts shared by every service: ids, resources, events, decisions, subjects.

Layer: the bottom. Imports only the standard library and msgspec; never does I/O.
"""
