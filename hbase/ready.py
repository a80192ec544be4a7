#!/usr/bin/env python3
"""Is the HBase behind a Thrift gateway ready? Asks HBase's own Thrift
(`Hbase` service, binary protocol, buffered transport) for its tables, then
creates, disables and deletes a probe table: that needs the master, the
region server and hbase:meta all up. Exit 0 when every call succeeded.

Usage: ready.py HOST:PORT
Standard library only (no thrift package): a few messages by hand."""

import socket
import struct
import sys

T_STOP, T_BOOL, T_I32, T_I64, T_DOUBLE, T_STRING, T_STRUCT, T_MAP, T_SET, T_LIST = 0, 2, 8, 10, 4, 11, 12, 13, 14, 15
T_BYTE, T_I16 = 3, 6


class Reader:
    def __init__(self, sock):
        self.sock = sock

    def take(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError("connection closed")
            out += chunk
        return out

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def string(self):
        return self.take(self.i32())

    def skip(self, ttype):
        sizes = {T_BOOL: 1, T_BYTE: 1, T_I16: 2, T_I32: 4, T_I64: 8, T_DOUBLE: 8}
        if ttype in sizes:
            return self.take(sizes[ttype])
        if ttype == T_STRING:
            return self.string()
        if ttype == T_STRUCT:
            fields = {}
            while True:
                ftype = self.take(1)[0]
                if ftype == T_STOP:
                    return fields
                fid = struct.unpack(">h", self.take(2))[0]
                fields[fid] = self.skip(ftype)
        if ttype == T_MAP:
            kt, vt = self.take(1)[0], self.take(1)[0]
            return [(self.skip(kt), self.skip(vt)) for _ in range(self.i32())]
        if ttype in (T_SET, T_LIST):
            et = self.take(1)[0]
            return [self.skip(et) for _ in range(self.i32())]
        raise ValueError(f"type {ttype}")


def string_field(fid, value):
    return struct.pack(">bh", T_STRING, fid) + struct.pack(">i", len(value)) + value


def call(sock, reader, name, args):
    msg = struct.pack(">I", 0x80010001) + struct.pack(">i", len(name)) + name.encode() + struct.pack(">i", 1)
    sock.sendall(msg + args + bytes([T_STOP]))
    version = reader.i32()
    reader.string()
    reader.i32()
    if version & 0xFF == 3:  # TApplicationException
        raise RuntimeError(f"{name}: {reader.skip(T_STRUCT)}")
    reply = reader.skip(T_STRUCT)
    errors = {k: v for k, v in reply.items() if k != 0}
    return reply.get(0), errors


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    table = b"rowsearch_ready_probe"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        reader = Reader(sock)
        tables, errors = call(sock, reader, "getTableNames", b"")
        if errors:
            sys.exit(f"getTableNames: {errors}")
        if table in (tables or []):
            call(sock, reader, "disableTable", string_field(1, table))
            call(sock, reader, "deleteTable", string_field(1, table))
        family = struct.pack(">bh", T_STRING, 1) + struct.pack(">i", 2) + b"f:" + bytes([T_STOP])
        descriptors = struct.pack(">bh", T_LIST, 2) + bytes([T_STRUCT]) + struct.pack(">i", 1) + family
        for name, args in [
            ("createTable", string_field(1, table) + descriptors),
            ("disableTable", string_field(1, table)),
            ("deleteTable", string_field(1, table)),
        ]:
            _, errors = call(sock, reader, name, args)
            if errors:
                sys.exit(f"{name}: {errors}")


if __name__ == "__main__":
    main()
