"""The fault suite: gangsched's services and the cluster disturbed while gangs bind."""
