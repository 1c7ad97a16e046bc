"""The control-plane REST API of the fake Daytona (/api/…), after apps/api of v0.190.0."""
import json
import re

from .server import CREATE_FIELDS, Sandbox

IMAGE_RE = re.compile(r"^FROM [A-Za-z0-9._/:@-]+\n$")


class Api:
    def __init__(self, fake):
        self.fake = fake

    def handle(self, h, path):
        routes = [
            ("GET", r"/api-keys/current", self.current_key),
            ("POST", r"/sandbox", self.create),
            ("GET", r"/sandbox", self.list),
            ("GET", r"/sandbox/([^/]+)", self.get),
            ("DELETE", r"/sandbox/([^/]+)", self.delete),
            ("POST", r"/sandbox/([^/]+)/start", self.start),
            ("POST", r"/sandbox/([^/]+)/stop", self.stop),
            ("POST", r"/sandbox/([^/]+)/archive", self.archive),
            ("PUT", r"/sandbox/([^/]+)/labels", self.labels),
        ]
        for method, pattern, fn in routes:
            m = re.fullmatch(pattern, path)
            if m and method == h.command:
                with self.fake.lock:
                    fn(h, *m.groups())
                return
        h.api_error(404, "Cannot %s /api%s" % (h.command, path))

    def current_key(self, h):
        h.send(200, {"name": "sandboxd-test", "value": "dtn_****", "createdAt": "2026-01-01T00:00:00Z",
                     "permissions": self.fake.permissions, "lastUsedAt": None, "expiresAt": None,
                     "userId": "user-fake"})

    def _sandbox(self, h, key):
        sb = self.fake.find(key)
        if sb is None:
            h.api_error(404, "Sandbox with ID or name %s not found" % key)
        return sb

    def create(self, h):
        body = h.json_body()
        if not isinstance(body, dict):
            h.api_error(400, "invalid request body")
            return
        bad = [k for k in body if k not in CREATE_FIELDS]
        if bad:
            h.api_error(400, "property %s should not exist" % bad[0])
            return
        bi = body.get("buildInfo")
        if bi is not None and (not isinstance(bi, dict) or
                               not IMAGE_RE.match(bi.get("dockerfileContent") or "")):
            h.api_error(400, "buildInfo.dockerfileContent must be a Dockerfile")
            return
        if body.get("snapshot") == "missing":
            h.api_error(400, "Snapshot missing not found. Did you add it through the Daytona "
                             "Dashboard?")
            return
        if body.get("name") and self.fake.find(body["name"]):
            h.api_error(409, "Sandbox with name %s already exists" % body["name"])
            return
        sb = Sandbox(self.fake, body)
        self.fake.sandboxes[sb.id] = sb
        h.send(200, sb.json())

    def list(self, h):
        labels = json.loads(h.query.get("labels", ["{}"])[0])
        limit = int(h.query.get("limit", ["100"])[0])
        start = int(h.query.get("cursor", ["0"])[0])
        items = [sb for sb in self.fake.sandboxes.values()
                 if all(sb.labels.get(k) == v for k, v in labels.items())]
        page = items[start:start + limit]
        nxt = str(start + limit) if start + limit < len(items) else None
        h.send(200, {"items": [sb.json() for sb in page], "nextCursor": nxt})

    def get(self, h, key):
        sb = self._sandbox(h, key)
        if sb:
            sb.advance()
            h.send(200, sb.json())

    def delete(self, h, key):
        sb = self._sandbox(h, key)
        if sb:
            sb.stop_sessions()
            sb.state = "destroying"
            out = sb.json()
            del self.fake.sandboxes[sb.id]
            h.send(200, out)

    def start(self, h, key):
        sb = self._sandbox(h, key)
        if not sb:
            return
        if sb.state == "started":
            h.send(200, sb.json())
        elif sb.state in ("error", "build_failed"):
            h.api_error(400, "Sandbox is in an errored state")
        elif sb.state in ("stopped", "archived"):
            sb.state = "starting" if sb.state == "stopped" else "restoring"
            h.send(200, sb.json())
        else:
            h.api_error(409, "Sandbox state change in progress")

    def stop(self, h, key):
        sb = self._sandbox(h, key)
        if not sb:
            return
        if sb.state != "started":
            h.api_error(400, "Sandbox is not in a stoppable state")
            return
        sb.stop_sessions()
        sb.state = "stopping"
        h.send(200, sb.json())

    def archive(self, h, key):
        sb = self._sandbox(h, key)
        if not sb:
            return
        if sb.state != "stopped":
            h.api_error(400, "Sandbox is not stopped")
            return
        sb.state = "archiving"
        h.send(200, sb.json())

    def labels(self, h, key):
        sb = self._sandbox(h, key)
        body = h.json_body()
        if not sb:
            return
        if not isinstance(body, dict) or not isinstance(body.get("labels"), dict):
            h.api_error(400, "labels must be an object")
            return
        sb.labels = dict(body["labels"])
        h.send(200, {"labels": sb.labels})
