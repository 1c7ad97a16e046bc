"""Server side of RFC 6455 WebSockets, as much as the Daytona log follow stream needs."""
import base64
import hashlib
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


class Closed(Exception):
    pass


class WebSocket:
    """Frames on an upgraded socket. Server frames are unmasked; client frames must be masked."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _send(self, opcode, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
        self.sock.sendall(head + payload)

    def send_binary(self, data):
        self._send(0x2, data)

    def send_close(self, code=1000, reason=b""):
        try:
            self._send(0x8, struct.pack("!H", code) + reason)
        except OSError:
            pass

    def _recv_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed()
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self):
        """(opcode, payload) of the next client frame; pings are answered here."""
        b0, b1 = self._recv_exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._recv_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._recv_exact(8))[0]
        if not b1 & 0x80:
            raise Closed()  # an unmasked client frame is a protocol error
        mask = self._recv_exact(4)
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(self._recv_exact(n)))
        opcode = b0 & 0x0F
        if opcode == 0x9:
            self._send(0xA, data)
        return opcode, data

    def read_pending(self):
        """Reads the frames of a socket that select() found readable (pings are answered);
        False once the client closed or went away."""
        try:
            while True:
                op, _ = self.read_frame()
                if op == 0x8:
                    return False
                if len(self.buf) < 2:
                    return True
        except (Closed, OSError):
            return False
