"""Signal safety with real short-lived processes; every process is killed in a finally."""

import os
import signal
import sys

import psutil
import pytest

from rmqemu.emulator.launcher.signals import ProcessRegistry, SpawnedProcess
from rmqemu.errors import ProcessGone, UnsafeSignal

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


@pytest.fixture
def child():
    popen, proc = SpawnedProcess.spawn(SLEEPER, name="sleeper")
    try:
        yield popen, proc
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.wait(timeout=10)
        proc.close()


def test_capture_records_pid_create_time_and_pidfd(child):
    popen, proc = child
    assert proc.pid == popen.pid
    assert proc.create_time == psutil.Process(popen.pid).create_time()
    assert proc.pidfd is not None
    assert proc.manifest_entry() == {"pid": popen.pid, "create_time": proc.create_time}


def test_recorded_process_can_be_stopped_continued_and_terminated(child):
    popen, proc = child
    proc.send(signal.SIGSTOP)
    _, status = os.waitpid(popen.pid, os.WUNTRACED)  # returns once stopped, does not reap
    assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGSTOP
    assert proc.status() == psutil.STATUS_STOPPED
    proc.send(signal.SIGCONT)
    _, status = os.waitpid(popen.pid, os.WCONTINUED)
    assert os.WIFCONTINUED(status)
    proc.send(signal.SIGTERM)
    assert popen.wait(timeout=10) == -signal.SIGTERM


def test_mismatched_create_time_is_refused_and_nothing_is_sent(child):
    popen, proc = child
    impostor = SpawnedProcess(proc.pid, proc.create_time - 5.0, "sleeper", pidfd=None)
    with pytest.raises(UnsafeSignal, match="pid reused"):
        impostor.send(signal.SIGKILL)
    assert popen.poll() is None  # still alive: the signal was not sent
    with pytest.raises(UnsafeSignal, match="pid reused"):
        SpawnedProcess.from_manifest("sleeper", proc.pid, proc.create_time + 5.0)


def test_reaped_process_is_refused(child):
    popen, proc = child
    popen.kill()
    popen.wait(timeout=10)
    with pytest.raises(ProcessGone, match="sleeper .* has exited"):
        proc.send(signal.SIGKILL)
    # the pidfd alone would refuse too, even if the pid were reused by now
    with pytest.raises(ProcessLookupError):
        signal.pidfd_send_signal(proc.pidfd, 0)


def test_zombie_is_refused(child):
    popen, proc = child
    popen.kill()
    os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
    with pytest.raises(ProcessGone, match="zombie"):
        proc.send(signal.SIGKILL)


def test_without_pidfd_the_pid_and_create_time_are_used(child):
    popen, proc = child
    plain = SpawnedProcess(proc.pid, proc.create_time, "sleeper", pidfd=None)
    plain.send(signal.SIGKILL)
    assert popen.wait(timeout=10) == -signal.SIGKILL
    with pytest.raises(ProcessGone):
        plain.send(signal.SIGKILL)


def test_from_manifest_reattaches_to_the_same_process(child):
    popen, proc = child
    again = SpawnedProcess.from_manifest("sleeper", **proc.manifest_entry())
    try:
        assert again.pidfd is not None
        again.send(signal.SIGKILL)
        assert popen.wait(timeout=10) == -signal.SIGKILL
    finally:
        again.close()
    with pytest.raises(ProcessGone, match="does not exist"):
        SpawnedProcess.from_manifest("sleeper", **proc.manifest_entry())


def test_registry_refuses_names_it_did_not_spawn(child):
    popen, proc = child
    registry = ProcessRegistry()
    registry.add(proc)
    with pytest.raises(UnsafeSignal, match=r"refusing to signal 'broker-a-0': "
                                           r"not a process this run spawned \(spawned: sleeper\)"):
        registry.send("broker-a-0", signal.SIGKILL)
    registry.send("sleeper", signal.SIGKILL)
    assert popen.wait(timeout=10) == -signal.SIGKILL
    assert registry.names() == ["sleeper"]
