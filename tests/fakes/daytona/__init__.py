"""A fake Daytona API and toolbox for sandboxd's tests (server.py says what it follows)."""
from .server import FakeDaytona  # noqa: F401
