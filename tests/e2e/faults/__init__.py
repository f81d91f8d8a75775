"""The fault suite (issue 20): gangsched's services and the cluster disturbed while gangs bind."""
