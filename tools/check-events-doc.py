#!/usr/bin/env python3
"""check-events-doc.py: docs/events.md and proto/tessera/v1/*.proto agree.

The convention (see docs/events.md, "How this page is checked"):
  - each .proto file has exactly one line `// topic: <topic>` (`none` for
    files of shared types);
  - docs/events.md has a section `## Topic `<topic>`` per topic (and
    `## Shared types` for `none`) listing each top-level message of that
    topic's files as a line starting with ``- `MessageName` ``;
  - a topic section listing no messages is a raw topic (the DLQ) and needs
    no .proto file.

Fails (exit 1) naming every difference: a message in a .proto file missing
from the doc, a message in the doc missing from the .proto files, a message
listed under another topic, a topic without a section. Python 3 stdlib only.
"""

import argparse
import os
import re
import sys

TOPIC_LINE = re.compile(r"^\s*//\s*topic:\s*(\S+)\s*$")
MESSAGE = re.compile(r"^\s*message\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")
TOPIC_HEADING = re.compile(r"^##\s+Topic\s+`([^`]+)`\s*$")
SHARED_HEADING = re.compile(r"^##\s+Shared types\s*$")
OTHER_HEADING = re.compile(r"^##\s")
BULLET = re.compile(r"^-\s+`([A-Za-z_][A-Za-z0-9_]*)`")

NONE = "none"


def strip_comments(line):
    """The line without // comments (no // appears inside proto strings here)."""
    i = line.find("//")
    return line if i < 0 else line[:i]


def parse_proto(path, errors):
    """(topic, [top-level message names]) of one .proto file."""
    topics, messages = [], []
    depth = 0
    in_block_comment = False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = TOPIC_LINE.match(line)
            if m:
                topics.append(m.group(1))
                continue
            code = strip_comments(line)
            if in_block_comment:
                end = code.find("*/")
                if end < 0:
                    continue
                code = code[end + 2:]
                in_block_comment = False
            while "/*" in code:
                start = code.find("/*")
                end = code.find("*/", start + 2)
                if end < 0:
                    code = code[:start]
                    in_block_comment = True
                    break
                code = code[:start] + code[end + 2:]
            if depth == 0:
                m = MESSAGE.match(code)
                if m:
                    messages.append((m.group(1), lineno))
            depth += code.count("{") - code.count("}")
    name = os.path.basename(path)
    if not topics:
        errors.append(f"{name}: no '// topic: <topic>' line (use 'none' for shared types)")
        return None, messages
    if len(topics) > 1:
        errors.append(f"{name}: {len(topics)} '// topic:' lines, want exactly one")
    return topics[0], messages


def parse_doc(path, errors):
    """{topic: {message: line}} from the doc's sections."""
    sections = {}
    current = None
    with open(path, encoding="utf-8") as f:
        in_code = False
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            m = TOPIC_HEADING.match(line)
            if m:
                current = m.group(1)
            elif SHARED_HEADING.match(line):
                current = NONE
            elif OTHER_HEADING.match(line):
                current = None
                continue
            else:
                m = BULLET.match(line)
                if m and current is not None:
                    msgs = sections[current]
                    name = m.group(1)
                    if name in msgs:
                        errors.append(f"{os.path.basename(path)}:{lineno}: {name} listed twice "
                                      f"under topic {current}")
                    msgs[name] = lineno
                continue
            if current in sections:
                errors.append(f"{os.path.basename(path)}:{lineno}: a second section for "
                              f"topic {current}")
            sections.setdefault(current, {})
    return sections


def check(proto_dir, doc_path):
    errors = []
    proto_msgs = {}  # message -> (topic, file)
    proto_topics = set()
    files = sorted(p for p in os.listdir(proto_dir) if p.endswith(".proto"))
    if not files:
        errors.append(f"{proto_dir}: no .proto files")
    for name in files:
        topic, messages = parse_proto(os.path.join(proto_dir, name), errors)
        if topic is None:
            continue
        proto_topics.add(topic)
        for msg, lineno in messages:
            if msg in proto_msgs:
                errors.append(f"{name}:{lineno}: message {msg} also defined in "
                              f"{proto_msgs[msg][1]}")
            proto_msgs[msg] = (topic, name)

    doc = parse_doc(doc_path, errors)
    docname = os.path.basename(doc_path)
    doc_msgs = {}  # message -> (topic, line)
    for topic, msgs in doc.items():
        for msg, lineno in msgs.items():
            doc_msgs[msg] = (topic, lineno)

    for topic in sorted(proto_topics):
        if topic not in doc:
            where = "'## Shared types'" if topic == NONE else f"'## Topic `{topic}`'"
            errors.append(f"topic {topic} (from the .proto files) has no section {where} "
                          f"in {docname}")
    for topic, msgs in sorted(doc.items()):
        if msgs and topic not in proto_topics:
            errors.append(f"{docname}: topic {topic} lists messages but no .proto file "
                          f"has '// topic: {topic}'")

    for msg, (topic, fname) in sorted(proto_msgs.items()):
        if msg not in doc_msgs:
            errors.append(f"message {msg} ({fname}, topic {topic}) is missing from {docname}")
        elif doc_msgs[msg][0] != topic:
            errors.append(f"message {msg}: topic {topic} in {fname} but listed under "
                          f"{doc_msgs[msg][0]} in {docname}:{doc_msgs[msg][1]}")
    for msg, (topic, lineno) in sorted(doc_msgs.items()):
        if msg not in proto_msgs:
            errors.append(f"{docname}:{lineno}: message {msg} (topic {topic}) is in no "
                          f".proto file")
    return errors, len(proto_msgs), len(doc)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proto-dir", default=os.path.join(root, "proto", "tessera", "v1"))
    ap.add_argument("--doc", default=os.path.join(root, "docs", "events.md"))
    args = ap.parse_args()
    try:
        errors, n_msgs, n_sections = check(args.proto_dir, args.doc)
    except OSError as e:
        print(f"check-events-doc: {e}", file=sys.stderr)
        return 1
    for e in errors:
        print(f"check-events-doc: {e}", file=sys.stderr)
    if errors:
        print(f"check-events-doc: {len(errors)} difference(s)", file=sys.stderr)
        return 1
    print(f"check-events-doc: ok ({n_msgs} messages, {n_sections} sections)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
