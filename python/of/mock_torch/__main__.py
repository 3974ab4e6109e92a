"""Runs a PyTorch script on of, unchanged:

    python -m of.mock_torch [--verbose] script.py [args...]
    python -m of.mock_torch [--verbose] -m package.module [args...]

as `python script.py args` (or `python -m package.module args`) would: as
__main__, with sys.argv[1:] the script's arguments and its directory first
on sys.path, but with of.mock_torch on, so its `import torch` is of.
--verbose prints each torch module resolved and each torch name of does
not provide (enable(verbose=True)).
"""

import os
import runpy
import sys

from . import enable

USAGE = ("usage: python -m of.mock_torch [--verbose] script.py [args...]\n"
         "       python -m of.mock_torch [--verbose] -m module [args...]")


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = False
    while args and args[0].startswith("-") and args[0] != "-m":
        option = args.pop(0)
        if option in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if option == "--verbose":
            verbose = True
        elif option == "--":
            break
        else:
            print(f"{USAGE}\nof.mock_torch: unknown option {option}", file=sys.stderr)
            return 2
    if not args or args == ["-m"]:
        print(f"{USAGE}\nof.mock_torch: no script to run", file=sys.stderr)
        return 2
    enable(verbose=verbose)
    if args[0] == "-m":
        sys.argv = args[1:]  # run_module sets argv[0] to the module's file
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
