"""The offline engine: the real program under Pulumi mocks, for tests and the render."""
