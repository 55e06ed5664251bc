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


def close_code(payload):
    """The status code of a close frame's payload (None when it has none)."""
    return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None


def open_ws(url, headers=None, timeout=15):
    """Open a WebSocket at url (http://host:port/path?query) with extra headers.
    Returns (socket, status, head, rest): status the HTTP status of the answer,
    head its bytes up to the empty line, rest what followed it."""
    import base64
    import socket
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    target = u.path + ("?" + u.query if u.query else "")
    h = {"Host": u.netloc, "Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
    h.update(headers or {})  # a value None leaves the header out
    lines = [f"GET {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in h.items() if v is not None]
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(65536)
        if not chunk:
            break
        head += chunk
    head, _, rest = head.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return s, status, head, rest


def open_signed(client, path, headers=None, timeout=15):
    """open_ws on the gateway, signed as client (bai_signer.Client) would sign a GET."""
    import bai_signer
    url = client.endpoint + path
    h = bai_signer.signed_headers(client.access_key, client.secret_key, "GET", url)
    h.update(headers or {})
    return open_ws(url, h, timeout)
