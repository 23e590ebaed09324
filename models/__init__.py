"""What the upstream controllers do with the objects we declare, as pure rules; imports nothing of ours."""
