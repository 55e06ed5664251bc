#!/usr/bin/env python3
"""structure.py [--build DIR] [--max-lines N] [--max-function-lines N] [--graph FOLDER]:
check the shape of the tree.

The rules (docs/testing.md, "Structure"):

1. No cycle between the files of a folder. A file's module is its path without
   the extension (x.c and x.h are one module, x). Module a depends on module b
   of the same folder when a's source includes b's header, or when a's object
   file refers to a symbol that b's object defines (read with nm from the built
   objects under DIR/obj and DIR/shim/obj: run `make` first). A cycle is
   printed with every edge inside it and why the edge is there.
2. No C file (.c, .h) tracked by git is longer than N lines (1,500, the style
   guide's limit: a file holds one concern in a few hundred lines and is split
   by concept past 1,500, never by a count).
   Generated code is not tracked, so it is not counted.
3. Every bool function a header declares is TS_MUST_CHECK (the error
   convention of libcommon/common.h; tools/must_check.py --fix adds it).
4. No object of libcommon, services or tests/tools calls a C library function
   that keeps hidden state between calls (strtok, gmtime, localtime ...:
   HIDDEN_STATE): the services run them on concurrent threads; the _r
   variants take the state as an argument.

5. docs/architecture.md's map names every module. In the table after "The
   folders", a row's first column names folders (`services/x/`) and its third
   column names their modules in backticks: a plain name `x` is module x, a
   pattern `x_*` the modules it matches, and `_y` right after a name `x` is
   module x_y (`netfilter` (`_plan`) names netfilter and netfilter_plan);
   backticked text that is not a plain name (a path, a file of another kind,
   a route) names no module. Every module directly in a listed folder but
   main must be named, and every name must be a module of the folder or of a
   folder under it (nothing named that is gone). A row that says "`x.h` is its
   table of contents" delegates the first rule to that header: its first
   comment names every module of the folder as x.c or x.h, and names nothing
   else.
6. No function of a tracked .c file is longer than MAX_FUNCTION_LINES (100)
   lines, from the '{' that opens its body to the '}' that closes it, unless
   the comment right above it has a line that starts with `Long:` and gives
   the reason (`/* Long: ... */`, or ` * Long: ...` in a longer comment).
   Functions are found in the clang-formatted text (functions()): a body
   opens with '{' alone at column 0 and closes with the next '}' at column 0.

--graph FOLDER prints that folder's dependency edges instead (to plan a split).
Exits 1 when a rule is broken, 0 otherwise.
"""
import argparse
import importlib.util
import collections
import fnmatch
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


# Rule 5: the map of the tree in docs/architecture.md names every module.
MAP_DOC = os.path.join('docs', 'architecture.md')
TICK_RE = re.compile(r'`([^`]+)`')
NAME_RE = re.compile(r'^[A-Za-z0-9_-]+\*?$')
TOC_RE = re.compile(r'`([A-Za-z0-9_-]+\.h)` is its table of contents')
TOC_NAME_RE = re.compile(r'(?<![\w/.-])([A-Za-z0-9_-]+)\.[ch]\b')


def folder_table(text):
    """The rows of the table after 'The folders:' as (folders, names cell)."""
    lines = text.split('\n')
    start = next(i for i, line in enumerate(lines) if line.startswith('The folders'))
    while not lines[start].endswith(':'):
        start += 1
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            if rows:
                break
            continue
        if not line.startswith('|'):
            break
        cells = [c.strip() for c in line.strip('|').split('|')]
        if len(cells) < 3 or cells[0] in ('folder', '---'):
            continue
        rows.append(([t for t in TICK_RE.findall(cells[0]) if t.endswith('/')], cells[2]))
    return rows


def row_names(cell):
    """The module names a cell gives: `x`, patterns `x_*`, and suffixes `_y` of
    the name before them (`netfilter` (`_plan`) is netfilter and netfilter_plan).
    Backticked text that is not a plain name (a path, a file of another kind, a
    route) names no module."""
    names, last = [], None
    for tok in TICK_RE.findall(cell):
        if not NAME_RE.match(tok):
            continue
        if tok.startswith('_') and last:
            names.append(last + tok)
        else:
            names.append(tok)
            last = tok
    return names


def named(mod, names):
    return any(fnmatch.fnmatchcase(mod, n) for n in names)


def map_problems(files, doc_text=None, toc_text=None):
    """Rule 5 over the tracked files; doc_text and toc_text stand for
    docs/architecture.md and the table-of-contents header when given."""
    if doc_text is None:
        with open(MAP_DOC) as fh:
            doc_text = fh.read()
    rows = folder_table(doc_text)
    problems = []
    for folders, cell in rows:
        names = row_names(cell)
        own, under = set(), set()
        for folder in folders:
            folder = folder.rstrip('/')
            if not os.path.isdir(folder):
                problems.append(f'{MAP_DOC}: folder {folder}/ is not in the tree')
                continue
            for f in files:
                if f.startswith(folder + '/'):
                    mod = os.path.basename(module(f))
                    under.add(mod)
                    if os.path.dirname(f) == folder and mod != 'main':
                        own.add((folder, mod))
        toc = TOC_RE.search(cell)
        for folder, mod in sorted(own):
            if not toc and not named(mod, names):
                problems.append(f'{MAP_DOC}: the row of {folder}/ does not name its module {mod}')
        for n in names:
            if not any(fnmatch.fnmatchcase(m, n) for m in under):
                problems.append(f'{MAP_DOC}: the row of {" ".join(folders)} names {n}, '
                                'no module there')
        if toc and len(folders) == 1:
            problems += toc_problems(os.path.join(folders[0].rstrip('/'), toc.group(1)), files,
                                     toc_text)
    return problems


def toc_problems(header, files, text=None):
    """A folder's table of contents: the header's first comment names every
    module of its folder as x.c or x.h, and nothing that is not one."""
    folder = os.path.dirname(header)
    if text is None:
        with open(header) as fh:
            text = fh.read()
    start, end = text.find('/*'), text.find('*/')
    listed = set(TOC_NAME_RE.findall(text[start:end]))
    mods = {os.path.basename(module(f)) for f in files if os.path.dirname(f) == folder}
    problems = [f'{header}: its table of contents does not name {m}.c' for m in sorted(mods - listed)]
    problems += [f'{header}: its table of contents names {m}, no module of {folder}/'
                 for m in sorted(listed - mods)]
    return problems


# Rule 6: no function over MAX_FUNCTION_LINES lines without a reason above it.
MAX_FUNCTION_LINES = 100
FUNC_NAME_RE = re.compile(r'([A-Za-z_]\w*)\s*\(')
LONG_REASON_RE = re.compile(r'^\s*(?:/\*|\*)\s*Long: \S')


def functions(text):
    """(name, first line, length, reason) of each function definition of
    clang-formatted C: its body opens with a '{' alone at column 0 and closes
    with the next '}' at column 0 (.clang-format: BreakBeforeBraces: Linux).
    The length counts the lines from that '{' to that '}'. The signature is
    the lines above the '{' up to a blank line, a preprocessor line, or one
    that ends a declaration, a body or a comment; the reason is a line of the
    comment right above the signature that starts with `Long:`."""
    lines = text.split('\n')
    out, i = [], 0
    while i < len(lines):
        if lines[i] != '{':
            i += 1
            continue
        j = i - 1
        while (j >= 0 and lines[j].strip() and not lines[j].startswith(('}', '#'))
               and not lines[j].rstrip().endswith((';', '*/', '{'))):
            j -= 1
        m = FUNC_NAME_RE.search(' '.join(lines[j + 1:i]))
        reason = False
        if j >= 0 and lines[j].rstrip().endswith('*/'):
            k = j
            while k >= 0:
                reason = reason or bool(LONG_REASON_RE.match(lines[k]))
                if lines[k].lstrip().startswith('/*'):
                    break
                k -= 1
        k = i + 1
        while k < len(lines) and not lines[k].startswith('}'):
            k += 1
        out.append((m.group(1) if m else '?', j + 2, k - i + 1, reason))
        i = k + 1
    return out


def long_functions(files, limit):
    found = []
    for f in files:
        if f.endswith('.c'):
            with open(f, errors='replace') as fh:
                for name, line, n, reason in functions(fh.read()):
                    if n > limit and not reason:
                        found.append((n, f, line, name))
    return sorted(found, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build', default='build')
    ap.add_argument('--max-lines', type=int, default=1500)
    ap.add_argument('--max-function-lines', type=int, default=MAX_FUNCTION_LINES)
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
    for n, f, line, name in long_functions(files, args.max_function_lines):
        print(f'long function: {f}:{line}: {name}() is {n} lines (over '
              f'{args.max_function_lines}, and no "Long:" reason above it)')
        bad += 1
    for p in map_problems(files):
        print(f'map: {p}')
        bad += 1
    if bad:
        print(f'structure: {bad} problem(s)')
        return 1
    print(f'structure: {len(files)} files, no cycle, none over {args.max_lines} lines, '
          'every bool function TS_MUST_CHECK, no C library call with hidden state, '
          f'no function over {args.max_function_lines} lines without a reason, '
          'every module on the map')
    return 0


if __name__ == '__main__':
    sys.exit(main())
