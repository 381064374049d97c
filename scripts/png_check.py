#!/usr/bin/env python3
"""Checks that a screenshot (PNG, 8-bit RGB or RGBA, non-interlaced: what headless Chromium writes)
shows a rendered chart rather than a blank or error page.

Usage: png_check.py FILE [--min-colours N] [--colour RRGGBB --min-pixels M]
Prints "<distinct colours> <pixels near the colour>" and exits 0 when the page has at least N
distinct colours (default 8) and, with --colour, at least M pixels within 40 per channel of it
(what the marks of a plot are drawn in); exits 1 otherwise, 2 on a file it cannot read.
Standard library only: the scripts run on a fresh machine with no imaging package.
"""
import argparse
import struct
import sys
import zlib


def read_png(path):
    """Returns (width, height, channels, rows) with each row a bytes object of unfiltered pixels."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour_type)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour_type}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        # Undo the per-row filter (PNG spec, section 9): each byte predicted from its left (a),
        # upper (b) and upper-left (c) neighbours of the same channel.
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            elif kind != 0:
                raise ValueError(f"unknown filter type {kind} in row {y}")
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--min-colours", type=int, default=8)
    parser.add_argument("--colour")
    parser.add_argument("--min-pixels", type=int, default=1)
    args = parser.parse_args()
    try:
        width, _, channels, rows = read_png(args.file)
    except (OSError, ValueError, zlib.error, struct.error) as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 2
    target = bytes.fromhex(args.colour) if args.colour else None
    colours, near = set(), 0
    for row in rows:
        for x in range(0, width * channels, channels):
            pixel = row[x:x + 3]
            colours.add(pixel)
            if target and all(abs(pixel[k] - target[k]) <= 40 for k in range(3)):
                near += 1
    print(len(colours), near)
    ok = len(colours) >= args.min_colours and (target is None or near >= args.min_pixels)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
