#!/usr/bin/env python3
"""must_check.py [--fix] HEADER...: bool functions declared without TS_MUST_CHECK.

The error convention (libcommon/common.h) marks every exported bool function
TS_MUST_CHECK; tools/structure.py checks it over the tree. --fix adds the
attribute to each declaration found (before the ';').
"""
import re
import sys

DECL = re.compile(r'^(?:extern\s+)?bool\s+\**([A-Za-z_]\w*)\s*\(([^;{]*?)\)([^;{()]*);', re.M | re.S)


def strip_comments(text):
    return re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)


def unmarked(text):
    clean = strip_comments(text)
    for m in DECL.finditer(clean):
        tail = m.group(3)
        if 'TS_MUST_CHECK' not in tail and 'warn_unused_result' not in tail:
            yield m


def main():
    fix = '--fix' in sys.argv
    found = 0
    for path in [a for a in sys.argv[1:] if a != '--fix']:
        with open(path) as fh:
            text = fh.read()
        hits = list(unmarked(text))
        for m in hits:
            found += 1
            print(f'{path}: {m.group(1)}')
        if fix and hits:
            for m in reversed(hits):
                end = m.end() - 1  # the ';'
                text = text[:end].rstrip() + ' TS_MUST_CHECK' + text[end:]
            with open(path, 'w') as fh:
                fh.write(text)
    return 1 if found and not fix else 0


if __name__ == '__main__':
    sys.exit(main())
