"""The modules of python/of form layers: no module imports, at module level
or inside a function, a module that imports it back (directly or through
others), so that an order exists in which each module imports only modules
before it, and no import has to be hidden inside a function to dodge a
half-initialised module.

The imports are read from the sources with `ast`, not by importing the
package, so this needs no build. Importing `a.b.c` runs the `__init__` of
each enclosing package the importer is not already inside (`a.b` here, for
a module outside it), so that counts as importing `a.b` too."""

import ast
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "python", "of")

# Modules of the package that are not Python sources: the extension built
# from python/src/OFModule.cpp, which imports no module of the package.
EXTENSIONS = {"of._C"}


def package_modules(root, name="of"):
    """Module name -> (path, is a package) for every .py file under `root`,
    the directory of package `name`."""
    found = {}
    for directory, _, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        prefix = [name] + ([] if rel == "." else rel.split(os.sep))
        for file in files:
            if not file.endswith(".py"):
                continue
            if file == "__init__.py":
                found[".".join(prefix)] = (os.path.join(directory, file), True)
            else:
                found[".".join(prefix + [file[:-3]])] = (os.path.join(directory, file), False)
    return found


def _imported_names(module, is_package, tree):
    """The dotted names `tree` imports (modules, or `package.attribute`),
    with relative imports resolved; from every scope, functions included."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - (node.level - 1)])
                source = base + ("." + node.module if node.module else "")
            else:
                source = node.module
            for alias in node.names:
                yield f"{source}.{alias.name}"  # a submodule, or an attribute of `source`


def import_graph(root, name="of", extensions=()):
    """Module -> the set of the package's modules it imports (see the
    module docstring for what counts)."""
    modules = package_modules(root, name)
    known = set(modules) | set(extensions)
    graph = {}
    for module, (path, is_package) in modules.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        if is_package:
            ancestors.add(module)
        targets = set()
        for dotted in _imported_names(module, is_package, tree):
            if dotted.split(".")[0] != name:
                continue  # outside the package
            # `from p import x` imports module p.x if there is one, else p
            target = dotted if dotted in known else dotted.rpartition(".")[0]
            while target and target not in known:
                target = target.rpartition(".")[0]
            if not target:
                continue
            targets.add(target)
            # enclosing packages the importer is not inside run their __init__
            parts = target.split(".")
            for i in range(1, len(parts)):
                enclosing = ".".join(parts[:i])
                if enclosing not in ancestors:
                    targets.add(enclosing)
        targets.discard(module)
        graph[module] = targets
    return graph


def circles(graph):
    """The strongly connected components of `graph` with more than one
    module (Tarjan): sets of modules that each import all the others,
    directly or through each other."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def cycles(graph):
    """For each circle of `graph`: a shortest cycle through its first module
    (the modules in import order, the first repeated at the end), and the
    circle."""
    return [(_shortest_cycle(min(c), c, graph), c) for c in circles(graph)]


def _shortest_cycle(start, component, graph):
    """A shortest path from `start` back to itself inside `component`."""
    paths, frontier = {start: [start]}, [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is on no cycle of {sorted(component)}")


def test_the_package_imports_in_layers():
    graph = import_graph(PACKAGE, extensions=EXTENSIONS)
    assert "of._ops" in graph and graph["of._ops"], "python/of was not found or not read"
    found = cycles(graph)
    assert not found, "import cycles among the modules of python/of:\n" + "\n".join(
        f"  {' -> '.join(cycle)}\n    (one of the cycles among {', '.join(sorted(circle))})"
        for cycle, circle in found)


def _write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def test_a_cycle_through_a_function_local_import_is_found(tmp_path):
    _write(tmp_path, {
        "__init__.py": "from . import a\n",
        "a.py": "from .b import helper\n",
        "b.py": "def helper():\n    from . import a\n    return a\n",
        "c.py": "import numpy\nfrom . import b\n",
    })
    assert [c for c, _ in cycles(import_graph(str(tmp_path)))] == [["of.a", "of.b", "of.a"]]


def test_importing_a_submodule_runs_its_package(tmp_path):
    # p/__init__ imports p.q, which reads p.r; x (outside p) imports p.r,
    # so p (and with it p.q) is imported by x: q importing x is a cycle.
    _write(tmp_path, {
        "__init__.py": "",
        "x.py": "from .p.r import value\n",
        "p/__init__.py": "from . import q\n",
        "p/q.py": "from . import r\nfrom .. import x\n",
        "p/r.py": "value = 1\n",
    })
    assert [c for c, _ in cycles(import_graph(str(tmp_path)))] == [
        ["of.p", "of.p.q", "of.x", "of.p"]]
    # a name of a package that is no module of it is an import of the package
    _write(tmp_path, {"x.py": "", "p/__init__.py": "from . import q\nVERSION = 1\n",
                      "p/q.py": "from . import r\n", "p/r.py": "from . import VERSION\n"})
    assert [c for c, _ in cycles(import_graph(str(tmp_path)))] == [
        ["of.p", "of.p.q", "of.p.r", "of.p"]]
