"""What Kubernetes itself does: the API machinery's types, the API server, its admission plugins and its controllers."""
