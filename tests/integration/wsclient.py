"""wsclient.py: the few lines of a WebSocket client (RFC 6455) the tests
need on a socket whose upgrade they made themselves: send masked frames
(text, binary, close, ping, or any opcode), read the server's frames."""
import os
import struct


TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode, data, fin=True):
    """The bytes of one masked frame (a client's) of any length."""
    if isinstance(data, str):
        data = data.encode()
    mask = os.urandom(4)
    b0 = (0x80 if fin else 0) | opcode
    if len(data) < 126:
        hdr = bytes([b0, 0x80 | len(data)])
    elif len(data) <= 0xFFFF:
        hdr = bytes([b0, 0x80 | 126]) + struct.pack(">H", len(data))
    else:
        hdr = bytes([b0, 0x80 | 127]) + struct.pack(">Q", len(data))
    m = (mask * (len(data) // 4 + 1))[:len(data)]  # XOR as big integers: fast for 1 MiB
    body = (int.from_bytes(data, "big") ^ int.from_bytes(m, "big")).to_bytes(len(data), "big")
    return hdr + mask + body


def send_frame(s, opcode, data, fin=True):
    s.sendall(frame(opcode, data, fin))


def send_text(s, text):
    """One masked text frame."""
    send_frame(s, TEXT, text)


def send_binary(s, data):
    """One masked binary frame."""
    send_frame(s, BINARY, data)


def frames(s, buf=b""):
    """Yield (opcode, payload) of the server's frames (unmasked, as servers
    send them), starting with what buf already holds; (None, b"") at EOF."""
    while True:
        while len(buf) >= 2:
            op, n, off = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, off = struct.unpack(">H", buf[2:4])[0], 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, off = struct.unpack(">Q", buf[2:10])[0], 10
            if len(buf) < off + n:
                break
            yield op, buf[off:off + n]
            buf = buf[off + n:]
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            yield None, b""
            return
        buf += chunk
