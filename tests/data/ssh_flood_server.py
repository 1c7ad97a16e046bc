#!/usr/bin/python3
"""An SSH server for tests/unit/check_ssh_window.c (paramiko: OpenSSH cannot be made to ignore
a window). One connection, any public key; the exec channel's command says what it sends:

  flood N    N bytes of DATA in 32 KiB packets without regard to the window the client
             granted (a hostile or broken server), then it drops the connection
  honest N   N bytes through paramiko's sendall, which waits for the window, then exit 0
  mixed N    the same in 32 KiB writes, each of 32767 bytes of stdout and 1 of stderr

Usage: ssh_flood_server.py HOSTKEY_FILE; prints the port it listens on (127.0.0.1)."""
import socket
import sys
import threading

import paramiko
from paramiko.common import cMSG_CHANNEL_DATA
from paramiko.message import Message


class Server(paramiko.ServerInterface):
    def __init__(self):
        self.command = None
        self.asked = threading.Event()

    def get_allowed_auths(self, username):
        return "publickey"

    def check_auth_publickey(self, username, key):
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind, chanid):
        if kind == "session":
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_pty_request(self, *args):
        return True

    def check_channel_exec_request(self, channel, command):
        self.command = command.decode()
        self.asked.set()
        return True


def flood(transport, chan, total):
    block = b"x" * 32768
    sent = 0
    while sent < total and transport.is_active():
        m = Message()
        m.add_byte(cMSG_CHANNEL_DATA)
        m.add_int(chan.remote_chanid)
        m.add_string(block)
        transport._send_user_message(m)  # past Channel.send, which keeps to the window
        sent += len(block)


def main():
    hostkey = paramiko.Ed25519Key(filename=sys.argv[1])
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    print(lsock.getsockname()[1], flush=True)
    sock, _ = lsock.accept()
    transport = paramiko.Transport(sock)
    transport.add_server_key(hostkey)
    server = Server()
    transport.start_server(server=server)
    chan = transport.accept(30)
    if chan is None or not server.asked.wait(30):
        sys.exit("no exec request")
    mode, n = server.command.split()
    try:
        if mode == "flood":
            flood(transport, chan, int(n))
        else:
            for _ in range(int(n) // 32768 if mode == "mixed" else 0):
                chan.sendall(b"y" * 32767)
                chan.sendall_stderr(b"e")
            chan.sendall(b"y" * (int(n) if mode == "honest" else 0))
            chan.send_exit_status(0)
            chan.close()
            transport.join(30)  # until the client has closed its end
    except (OSError, EOFError, paramiko.SSHException):
        pass  # the client cut the connection: what a flood should get
    transport.close()


main()
