"""Starts the Modal fakes (tests/fakes/modal/) for the integration tests and talks to their
control ports, plus a TCP relay that can cut every connection through it (a dropped link)."""
import json
import os
import select
import socket
import subprocess
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
FAKES = os.path.join(os.path.dirname(HERE), "fakes", "modal")


class _Fake:
    def __init__(self, script, args):
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.join(FAKES, script)] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("READY "):
            self.proc.kill()
            raise AssertionError("%s did not start: %r %s" % (script, line,
                                                              self.proc.stderr.read().decode()))
        self.ports = {k: int(v) for k, v in (w.split("=") for w in line.split()[1:])}

    def control(self, **values):
        req = urllib.request.Request("http://127.0.0.1:%d/control" % self.ports["control"],
                                     data=json.dumps(values).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def state(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/state" % self.ports["control"],
                                    timeout=10) as r:
            return json.load(r)

    def counter(self, name):
        return self.state()["counters"].get(name, 0)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


class FakeModal(_Fake):
    """fake_modal.py; url is its control-plane API (h2c)."""

    def __init__(self, token_id="ak-test-id", token_secret="as-test-secret-0123456789",
                 router_url=None):
        args = ["--token-id", token_id, "--token-secret", token_secret]
        if router_url:
            args += ["--router-url", router_url]
        super().__init__("fake_modal.py", args)
        self.token_id = token_id
        self.token_secret = token_secret
        self.url = "http://127.0.0.1:%d" % self.ports["api"]
        self.router_port = self.ports["router"]


class FakeGateway(_Fake):
    """fake_gateway.py; url is its REST API."""

    def __init__(self, token="gw-test-token-abcdef0123456789"):
        super().__init__("fake_gateway.py", ["--token", token])
        self.token = token
        self.url = "http://127.0.0.1:%d" % self.ports["gateway"]


class Relay:
    """Forwards 127.0.0.1:port to target_port (settable until the first connection); cut()
    drops every open connection (RST), as a lost link does."""

    def __init__(self, target_port=None):
        self.target = target_port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns = []
        self.accepted = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.conns.append((c, u))
                self.accepted += 1
            threading.Thread(target=self._pump, args=(c, u), daemon=True).start()

    def _pump(self, a, b):
        socks = [a, b]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 1.0)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            return
        finally:
            for s in socks:
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for pair in conns:
            for s in pair:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return len(conns)

    def close(self):
        self.lsock.close()
        self.cut()
