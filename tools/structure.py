#!/usr/bin/env python3
"""structure.py [--build DIR] [--max-lines N] [--graph FOLDER]: check the shape of the tree.

Three rules (docs/testing.md, "Structure"):

1. No cycle between the files of a folder. A file's module is its path without
   the extension (x.c and x.h are one module, x). Module a depends on module b
   of the same folder when a's source includes b's header, or when a's object
   file refers to a symbol that b's object defines (read with nm from the built
   objects under DIR/obj and DIR/shim/obj: run `make` first). A cycle is
   printed with every edge inside it and why the edge is there.
2. No C file (.c, .h) tracked by git is longer than N lines (800). Generated
   code is not tracked, so it is not counted.
3. Every bool function a header declares is TS_MUST_CHECK (the error
   convention of libcommon/common.h; tools/must_check.py --fix adds it).
4. No object of libcommon, services or tests/tools calls a C library function
   that keeps hidden state between calls (strtok, gmtime, localtime ...:
   HIDDEN_STATE): the services run them on concurrent threads; the _r
   variants take the state as an argument.

--graph FOLDER prints that folder's dependency edges instead (to plan a split).
Exits 1 when a rule is broken, 0 otherwise.
"""
import argparse
import importlib.util
import collections
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def tracked_sources():
    out = subprocess.run(['git', 'ls-files', '*.c', '*.h'], capture_output=True, text=True,
                         check=True).stdout
    return [f for f in out.split() if os.path.exists(f)]


def module(path):
    return os.path.splitext(path)[0]


def include_edges(files, edges, why):
    known = set(files)
    for f in files:
        folder = os.path.dirname(f)
        with open(f, errors='replace') as fh:
            text = fh.read()
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1)
            for cand in (os.path.normpath(os.path.join(folder, inc)), os.path.normpath(inc)):
                if cand in known:
                    a, b = module(f), module(cand)
                    if a != b and os.path.dirname(a) == os.path.dirname(b):
                        edges[a].add(b)
                        why.setdefault((a, b), 'includes ' + os.path.basename(cand))
                    break


def object_files(build):
    for top in (os.path.join(build, 'obj'), os.path.join(build, 'shim', 'obj')):
        for dirpath, _, names in os.walk(top):
            for n in names:
                if n.endswith('.o'):
                    path = os.path.join(dirpath, n)
                    rel = os.path.relpath(path, top)[:-2]
                    if not rel.startswith('gen' + os.sep):
                        yield rel, path


# C library functions that keep their state (or their result) in hidden static
# storage, unsafe on concurrent threads; strerror and strsignal are not here:
# glibc 2.32 made them thread-safe.
HIDDEN_STATE = {'strtok', 'gmtime', 'localtime', 'ctime', 'asctime', 'inet_ntoa', 'getpwnam',
                'getpwuid', 'getgrnam', 'getgrgid', 'gethostbyname', 'gethostbyaddr', 'getlogin',
                'ttyname', 'ptsname', 'tmpnam', 'ecvt', 'fcvt', 'getmntent', 'crypt', 'drand48',
                'lrand48', 'mrand48'}
HIDDEN_STATE_DIRS = ('libcommon', 'services', os.path.join('tests', 'tools'))


def call_edges(build, edges, why, hidden_state):
    defined = {}
    undefined = collections.defaultdict(set)
    for rel, path in object_files(build):
        if not os.path.exists(rel + '.c'):
            continue  # an object left over from a file that has moved
        out = subprocess.run(['nm', path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in 'TDBR':
                defined.setdefault((os.path.dirname(rel), parts[2]), rel)
            elif len(parts) == 2 and parts[0] == 'U':
                undefined[rel].add(parts[1])
    for a, syms in undefined.items():
        if a.startswith(HIDDEN_STATE_DIRS):
            for s in sorted(syms & HIDDEN_STATE):
                hidden_state.append((a, s))
        for s in sorted(syms):
            b = defined.get((os.path.dirname(a), s))
            if b and b != a:
                edges[a].add(b)
                why.setdefault((a, b), 'calls ' + s)


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build', default='build')
    ap.add_argument('--max-lines', type=int, default=800)
    ap.add_argument('--graph', metavar='FOLDER')
    args = ap.parse_args()
    os.chdir(subprocess.run(['git', 'rev-parse', '--show-toplevel'], capture_output=True,
                            text=True, check=True).stdout.strip())
    files = tracked_sources()
    if not os.path.isdir(os.path.join(args.build, 'obj')):
        print(f'structure: no {args.build}/obj: run make first', file=sys.stderr)
        return 1
    edges, why = collections.defaultdict(set), {}
    include_edges(files, edges, why)
    hidden_state = []
    call_edges(args.build, edges, why, hidden_state)

    if args.graph:
        folder = args.graph.rstrip('/')
        for a in sorted(edges):
            if os.path.dirname(a) == folder:
                for b in sorted(edges[a]):
                    print(f'{a} -> {b} ({why[(a, b)]})')
        return 0

    bad = 0
    for comp in cycles(edges):
        bad += 1
        members = set(comp)
        print('cycle: ' + ' '.join(comp))
        for a in comp:
            for b in sorted(edges[a] & members):
                print(f'    {a} -> {b} ({why[(a, b)]})')
    long_files = []
    for f in files:
        with open(f, errors='replace') as fh:
            n = sum(1 for _ in fh)
        if n > args.max_lines:
            long_files.append((n, f))
    for n, f in sorted(long_files, reverse=True):
        print(f'long: {f}: {n} lines (over {args.max_lines})')
    bad += len(long_files)
    spec = importlib.util.spec_from_file_location(
        'must_check', os.path.join(HERE, 'must_check.py'))
    must_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(must_check)
    for f in files:
        if f.endswith('.h'):
            with open(f, errors='replace') as fh:
                for m in must_check.unmarked(fh.read()):
                    print(f'unchecked: {f}: bool {m.group(1)}() is not TS_MUST_CHECK')
                    bad += 1
    for rel, sym in sorted(hidden_state):
        print(f'hidden state: {rel}.c calls {sym}() (not safe on concurrent threads; use {sym}_r)')
        bad += 1
    if bad:
        print(f'structure: {bad} problem(s)')
        return 1
    print(f'structure: {len(files)} files, no cycle, none over {args.max_lines} lines, '
          'every bool function TS_MUST_CHECK, no C library call with hidden state')
    return 0


if __name__ == '__main__':
    sys.exit(main())
