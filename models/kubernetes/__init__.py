"""What Kubernetes itself does: the API server, its admission plugins and its controllers."""
