"""What Prometheus does with what it scrapes."""
