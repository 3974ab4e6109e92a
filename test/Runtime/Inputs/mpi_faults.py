"""A rank that hangs, stops, dies or fails never hangs `of-run -n 2`.

  mpi_faults.py DIR

Runs the 2-rank plan of mpi_plans.py (kinds2) with one rank made to
misbehave at its third communication, the plan's all_reduce after the
ranks' two agreement exchanges (OF_TEST_FAULT, see
MpiCommunicator.cpp), or killed from outside with SIGKILL while the other
rank waits for it in a collective. Each scenario must end with a non-zero
exit code, within its bound (the --timeout, plus slack; far below the
default 60 s), with no output written. Prints one line per scenario: its
name, "ok" or what went wrong, and the first of-run error line.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_plans  # noqa: E402


def run(directory, name, env, timeout_flag, bound, action=None):
    out = os.path.join(directory, f"out-{name}")
    cmd = ["of-run", "-n", "2", PLAN] + ARGS + ["--output-dir", out,
                                                "--timeout", str(timeout_flag)]
    start = time.time()
    proc = subprocess.Popen(cmd, env=dict(os.environ, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    if action:
        action()
    try:
        output, _ = proc.communicate(timeout=bound + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        print(f"{name}: HUNG (killed after {bound + 30} s)")
        return False
    elapsed = time.time() - start
    errors = [line for line in output.splitlines()
              if line.startswith("of-run: error:")]
    first = errors[0] if errors else "(no of-run error line)"
    problems = []
    if proc.returncode == 0:
        problems.append("exit code 0")
    if elapsed > bound:
        problems.append(f"took {elapsed:.1f} s > {bound} s")
    if os.path.isdir(out) and os.listdir(out):
        problems.append(f"wrote {sorted(os.listdir(out))}")
    print(f"{name}: {'ok' if not problems else '; '.join(problems)}: {first}")
    if problems:
        print(output)
    return not problems


def main(directory):
    global PLAN, ARGS
    _, PLAN, ARGS, _, _ = mpi_plans.write("kinds2", directory)
    ok = True
    # Rank 1 hangs before its first collective: rank 0 times out.
    ok &= run(directory, "hang", {"OF_TEST_FAULT": "hang:1:3"}, 3, 20)
    # Rank 0 stops (SIGSTOP): rank 1 times out, the job is aborted.
    ok &= run(directory, "stop", {"OF_TEST_FAULT": "stop:0:3"}, 3, 20)
    # Rank 1 fails with an error: it aborts the job at once.
    ok &= run(directory, "error", {"OF_TEST_FAULT": "error:1:3"}, 30, 20)
    # Rank 1 kills itself, or exits without finalising: mpirun ends the job.
    ok &= run(directory, "self-kill", {"OF_TEST_FAULT": "kill:1:3"}, 30, 20)
    ok &= run(directory, "exit", {"OF_TEST_FAULT": "exit:1:3"}, 30, 20)

    # Rank 1 hangs and is killed from outside while rank 0 waits in the
    # all_reduce; the 30 s timeout must not be what ends the job.
    pid_file = os.path.join(directory, "rank1.pid")

    def kill_rank_1():
        deadline = time.time() + 20
        while not os.path.exists(pid_file) and time.time() < deadline:
            time.sleep(0.05)
        if not os.path.exists(pid_file):
            print("kill-9: rank 1 never wrote its pid")
            return
        time.sleep(0.5)  # rank 0 is in the collective by now
        with open(pid_file) as f:
            os.kill(int(f.read()), signal.SIGKILL)

    ok &= run(directory, "kill-9", {"OF_TEST_FAULT": "hang:1:3",
                                    "OF_TEST_FAULT_PIDFILE": pid_file},
              30, 15, kill_rank_1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
