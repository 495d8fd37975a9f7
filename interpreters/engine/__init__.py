"""Running ssegrade in container engines: the bundle a task image without Python is graded
with (`interpreters.engine.bundle`)."""
