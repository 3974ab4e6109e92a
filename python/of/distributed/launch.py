"""Runs a Python script as N ranks of one job:

    python -m of.distributed.launch --nproc 2 train.py [args...]

It starts the ranks with Open MPI's mpirun (as of-run -n does: as root it
passes --allow-run-as-root, it allows more ranks than cores, and uses
shared memory between the local processes). Inside, of.env.rank() and
of.env.world_size() tell each process its place; a plain `mpirun -n N
python train.py` works the same way.
"""

import argparse
import os
import shutil
import sys


def mpirun_command(nproc, program):
    mpirun = os.environ.get("OF_MPIRUN") or shutil.which("mpirun")
    if not mpirun:
        raise SystemExit("of.distributed.launch: mpirun is not on PATH (install Open MPI: "
                         "apt-get install openmpi-bin; or set OF_MPIRUN)")
    cmd = [mpirun, "-n", str(nproc)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
            "--mca", "pml", "ob1"]
    return cmd + program


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m of.distributed.launch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", "--nproc_per_node", type=int, required=True,
                        help="number of ranks to start on this machine")
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    if options.nproc < 1:
        parser.error("--nproc must be at least 1")
    if not os.path.exists(options.script):
        parser.error(f"no such script: {options.script}")
    cmd = mpirun_command(options.nproc, [sys.executable, options.script] + options.args)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
