"""Protobuf wire format written by hand, for messages the tests build that
tessera-busctl would not produce (a bad or repeated event): varints, fields
(int, float as fixed64 double, str or bytes as length-delimited) and
envelope.proto's Envelope around a payload."""
import struct
import time


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative ints as two's complement, as protobuf does
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, value):
    if isinstance(value, float):
        return varint(num << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    value = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(value)) + value


def envelope(event_id, msg_type, payload, producer="it/raw"):
    """An Envelope (envelope.proto: id, type, schema version 1, occurred_at now,
    producer, payload)."""
    return (field(1, event_id) + field(2, msg_type) + field(3, 1) +
            field(4, int(time.time() * 1000)) + field(5, producer) + field(8, payload))
