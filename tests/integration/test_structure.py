"""tools/structure.py's rules on the map of the tree and on long functions:
the tree passes them, and each notices what it is there to notice."""

import importlib.util
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "architecture.md")
TOC = os.path.join(ROOT, "services", "registry", "registry.h")


def load():
    spec = importlib.util.spec_from_file_location(
        "structure", os.path.join(ROOT, "tools", "structure.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


S = load()


def tracked():
    out = subprocess.run(["git", "ls-files", "*.c", "*.h"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [f for f in out.split() if os.path.exists(os.path.join(ROOT, f))]


def problems(doc=None, toc=None):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return S.map_problems(tracked(), doc, toc)
    finally:
        os.chdir(cwd)


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_the_map_names_every_module():
    assert problems() == []


def test_a_module_left_out_of_a_row_is_reported():
    doc = read(DOC).replace("`strmap` |", "|", 1)
    assert "`strmap`" not in doc
    assert problems(doc) == [
        "docs/architecture.md: the row of services/scheduler/ does not name its module strmap"]


def test_a_name_of_no_module_is_reported():
    doc = read(DOC).replace("`strmap` |", "`strmap`, `strset` |", 1)
    assert problems(doc) == [
        "docs/architecture.md: the row of services/scheduler/ names strset, no module there"]


def test_patterns_and_suffixes_name_modules():
    doc = read(DOC)
    # gql_* covers the gateway's GraphQL modules; without it each is missing
    missing = problems(doc.replace("`gql_*`", "`graphql`", 1))
    assert "docs/architecture.md: the row of services/gateway/ does not name its module " \
           "gql_parse" in missing
    # `netfilter` (`_plan`, ...) names netfilter_plan; a suffix of another name does not
    missing = problems(doc.replace("`netfilter` (`_plan`", "`ports` (`_plan`", 1))
    assert "docs/architecture.md: the row of services/agent/ does not name its module " \
           "netfilter_plan" in missing


def test_a_folder_not_in_the_tree_is_reported():
    doc = read(DOC).replace("`services/cni-portmap/`", "`services/cni-gone/`", 1)
    assert "docs/architecture.md: folder services/cni-gone/ is not in the tree" in problems(doc)


def test_the_table_of_contents_names_every_module():
    toc = read(TOC)
    assert " waiters.c " in toc
    assert problems(toc=toc.replace(" waiters.c ", " ", 1)) == [
        "services/registry/registry.h: its table of contents does not name waiters.c"]
    assert problems(toc=toc.replace(" waiters.c ", " waiters.c gone.c ", 1)) == [
        "services/registry/registry.h: its table of contents names gone, no module of "
        "services/registry/"]


BODY = "\n".join("    x += %d;" % i for i in range(99))


def test_function_lengths_and_reasons():
    text = ("/* A short one. */\nstatic int a(void)\n{\n    return 1;\n}\n\n"
            "int long_one(int x,\n             int y)\n{\n" + BODY + "\n}\n\n"
            "/* Several lines.\n * Long: one table of cases. */\nint with_reason(int x)\n{\n"
            + BODY + "\n}\n\n"
            "/* Long as it is, no reason. */\nint no_reason(int x)\n{\n" + BODY + "\n}\n"
            "static const int table[] = {\n    1,\n};\n")
    found = S.functions(text)
    assert [(name, n, reason) for name, _, n, reason in found] == [
        ("a", 3, False), ("long_one", 101, False), ("with_reason", 101, True),
        ("no_reason", 101, False)]
    assert found[1][1] == 7  # the signature's first line


def test_no_long_function_without_a_reason():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert S.long_functions(tracked(), S.MAX_FUNCTION_LINES) == []
    finally:
        os.chdir(cwd)
