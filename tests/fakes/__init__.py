"""Fakes of the services sandboxd's tests cannot run here (Daytona API, …)."""
