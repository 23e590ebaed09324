"""What upstream controllers do, as tables and pure functions; imports nothing of ours."""
