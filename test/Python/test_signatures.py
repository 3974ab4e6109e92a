"""The signature audit of docs/python.md's rule: every public callable of
of, of.nn, of.nn.functional, of.nn.init, of.optim, of.optim.lr_scheduler,
of.distributions and of.Tensor that PyTorch also has takes PyTorch's parameters (the same
names, positions and defaults), so a keyword a PyTorch program passes is
never silently swallowed or refused by a TypeError for a name PyTorch has;
the exceptions are the rows of docs/python.md's "Signature differences"
table, and a row that no longer differs fails too (the table stays true).

PyTorch's own signature comes from inspect, or, for its builtins, from the
first line of the docstring ("sum(dim=None, keepdim=False, ...) -> Tensor");
callables whose signature neither gives are counted and not compared."""

import inspect
import os
import re

import pytest

import of
import of.distributions
import of.nn
import of.nn.functional
import of.nn.init
import of.optim
import of.optim.lr_scheduler

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "python.md")

NAMESPACES = [("of", of, torch), ("of.nn", of.nn, torch.nn),
              ("of.nn.functional", of.nn.functional, torch.nn.functional),
              ("of.nn.init", of.nn.init, torch.nn.init), ("of.optim", of.optim, torch.optim),
              ("of.optim.lr_scheduler", of.optim.lr_scheduler, torch.optim.lr_scheduler),
              ("of.distributions", of.distributions, torch.distributions)]


def signatures(f, method=False):
    """The signatures of `f` (of a class: its __init__; of a method: without
    its first parameter): inspect's, or the overloads its docstring lists
    (a builtin's "sum(dim=None, keepdim=False, *, dtype=None) -> Tensor"
    lines); [] where neither gives one."""
    target = f.__init__ if inspect.isclass(f) else f
    try:
        sig = inspect.signature(target)
        params = list(sig.parameters.values())
        if inspect.isclass(f) or method:
            params = params[1:]
        if inspect.isclass(f) and [p.kind for p in params] == [
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
            return []  # a builtin class's generic __init__(*args, **kwargs)
        return [sig.replace(parameters=params)]
    except (TypeError, ValueError):
        pass
    found = []
    name = getattr(f, "__name__", "")
    doc = getattr(f, "__doc__", None) or ""
    # a signature may run over several lines; "*size, *, out=None" (a
    # keyword-only marker after varargs) is not Python, "*size, out=None" is
    for match in re.finditer(rf"(?m)^\s*(?:\.\. function:: )?{re.escape(name)}\(([^)]*)\)"
                             r"\s*->", doc):
        params = re.sub(r"(\*\w+),\s*\*,", r"\1,", " ".join(match.group(1).split()))
        scope = {"inf": float("inf"), "torch": torch, "Tensor": torch.Tensor}
        try:
            exec(f"def documented({params}): pass", scope)  # noqa: S102
            found.append(inspect.signature(scope["documented"]))
        except Exception:  # noqa: BLE001 - a docstring line that is not Python
            pass
    return found


def differences(ours, theirs):
    """How `ours` departs from PyTorch's `theirs`: PyTorch's parameters it
    lacks or takes elsewhere or with another default, and positional
    parameters PyTorch does not have."""
    found = []
    mine = {p.name: (i, p) for i, p in enumerate(ours.parameters.values())}
    # keywords the table's `*` row says no function takes
    general = set(re.findall(r"`(\w+)=`", documented().get("*", "")))
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for i, p in enumerate(theirs.parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith("_") or \
                (p.name in general and p.name not in mine):
            continue
        if p.name not in mine:
            if not any(q.kind == q.VAR_POSITIONAL for q in ours.parameters.values()) or \
                    p.kind not in positional:
                found.append(f"no {p.name}")
            continue
        j, q = mine[p.name]
        if p.kind in positional and (j != i or q.kind not in positional):
            found.append(f"{p.name} at position {j}, PyTorch's at {i}")
        if p.default is not p.empty and not _same_default(q.default, p.default):
            found.append(f"{p.name}={q.default!r}, PyTorch's {p.default!r}")
    names = set(theirs.parameters)
    for q in ours.parameters.values():
        if q.name not in names and q.kind in positional and not q.name.startswith("_") \
                and not any(p.kind == p.VAR_POSITIONAL for p in theirs.parameters.values()):
            found.append(f"extra {q.name}")
    return found


def _same_default(a, b):
    if a is inspect.Parameter.empty:
        return False
    try:
        return a == b and type(a) is type(b) or (a == b and {type(a), type(b)} <= {int, float})
    except Exception:  # noqa: BLE001 - defaults that do not compare
        return a is b


def audit():
    """name -> its differences from PyTorch, for every compared callable;
    and how many could not be compared."""
    found, uncompared = {}, []
    pairs = [(f"{name}.{attr}", getattr(mod, attr), getattr(tmod, attr))
             for name, mod, tmod in NAMESPACES for attr in dir(mod)
             if not attr.startswith("_") and hasattr(tmod, attr)
             and callable(getattr(mod, attr)) and not inspect.ismodule(getattr(mod, attr))]
    pairs += [(f"of.Tensor.{attr}", getattr(of.Tensor, attr), getattr(torch.Tensor, attr))
              for attr in dir(of.Tensor) if not attr.startswith("_")
              and hasattr(torch.Tensor, attr) and callable(getattr(of.Tensor, attr))]
    for name, ours, theirs in pairs:
        method = name.startswith("of.Tensor.")
        a, b = signatures(ours, method), signatures(theirs, method)
        if not a or not b:
            uncompared.append(name)
            continue
        # the overload of PyTorch's that ours is closest to
        diff = min((differences(a[0], overload) for overload in b), key=len)
        if diff:
            found[name] = diff
    return found, uncompared


def documented():
    """The rows of docs/python.md's signature-differences table: name -> why."""
    text = open(DOC).read()
    section = text.split("### Signature differences", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\|\s*`([\w.*]+)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2).strip()
    return rows


def test_signatures_match_pytorch_or_are_documented():
    found, uncompared = audit()
    rows = documented()
    print(f"{len(found)} differ (documented), {len(uncompared)} not comparable: "
          f"{', '.join(sorted(uncompared))}")
    undocumented = {k: v for k, v in found.items() if k not in rows}
    assert not undocumented, (
        "signatures that differ from PyTorch's without a row in docs/python.md's "
        "'Signature differences' table:\n" +
        "\n".join(f"  {k}: {'; '.join(v)}" for k, v in sorted(undocumented.items())))
    stale = sorted(k for k in rows if k not in found and k != "*")
    assert not stale, f"rows of the table that no longer differ from PyTorch: {stale}"


def test_the_audit_sees_a_difference():
    def ours(input, dim=-1):  # noqa: A002
        pass

    def theirs(input, dim=None, dtype=None):  # noqa: A002
        pass
    assert differences(inspect.signature(ours), inspect.signature(theirs)) == \
        ["dim=-1, PyTorch's None", "no dtype"]
