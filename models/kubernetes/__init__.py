"""Kubernetes itself: the API machinery's types and the built-in controllers' rules."""
