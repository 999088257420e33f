"""Running test code in a forked child that a hang cannot take down with the suite."""
import faulthandler
import os
import signal
import time
import traceback


def run_in_child(body, timeout=20):
    """Fork, run `body()` in the child, and return its exit status (0 = ok); a child still
    running after `timeout` seconds is killed and reported as hung, once it has printed every
    thread's stack into the test's output (where the hang is) on SIGUSR1."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            # (A signal handler, not dump_traceback_later's watchdog thread: a child forked
            # while that runs would wait for it forever.)
            faulthandler.register(signal.SIGUSR1, all_threads=True)
            signal.alarm(timeout + 5)  # the parent's deadline comes first; this is a backstop
            body()
            status = 0
        except BaseException:
            traceback.print_exc()  # in the test's captured output
        finally:
            os._exit(status)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGUSR1)
    time.sleep(0.5)  # (faulthandler writes from the signal handler, at once)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"
