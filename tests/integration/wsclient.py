"""wsclient.py: the few lines of a WebSocket client (RFC 6455) the tests
need on a socket whose upgrade they made themselves: send a masked text
frame, read the server's frames."""
import os
import struct


def send_text(s, text):
    """One masked text frame (payloads up to 64 KiB)."""
    data = text.encode()
    mask = os.urandom(4)
    if len(data) < 126:
        hdr = bytes([0x81, 0x80 | len(data)])
    else:
        hdr = bytes([0x81, 0x80 | 126]) + struct.pack(">H", len(data))
    s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


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
