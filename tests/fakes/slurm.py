"""A real single-node SLURM cluster from Debian's packages, for the cluster test.

Installs ``slurmctld slurmd slurm-client munge`` when they are missing (apt-get, as root:
about 6-10 s), writes ``/etc/slurm/slurm.conf`` (the executor plugin's job step strips
``SLURM_CONF``, so the configuration must be at the default path; any file already there is
put back afterwards), and starts munged (as the munge user), slurmctld and slurmd in the
foreground (no systemd here; ``slurmd -N localhost`` since the host is not called localhost).
Every daemon it started is stopped by its PID on exit.

No slurmdbd: ``sacct`` does not work, so the profile asks the plugin for squeue.
``DefMemPerCPU`` keeps one job from taking the whole node's memory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fakes.apt import apt_install

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
CONF = Path("/etc/slurm/slurm.conf")


class SlurmUnavailable(RuntimeError):
    pass


def ensure_packages() -> None:
    """Install the SLURM and munge packages when a binary is missing (root only)."""
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "munged") if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable(f"SLURM is not installed ({', '.join(missing)} missing) and installing it needs root")
    apt_install(*PACKAGES, timeout=900)


def _node_line() -> str:
    """The node as slurmd sees it (CPUs, sockets, cores, memory), named localhost."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True, timeout=60).stdout
    first = out.splitlines()[0]
    fields = dict(part.split("=", 1) for part in first.split() if "=" in part)
    mem = int(fields.get("RealMemory", "2000"))
    keep = {k: fields[k] for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore") if k in fields}
    return "NodeName=localhost NodeAddr=127.0.0.1 " + " ".join(f"{k}={v}" for k, v in keep.items()) + f" RealMemory={max(1000, mem - 1000)} State=UNKNOWN"


class SlurmCluster:
    """``with SlurmCluster(workdir) as cluster:`` a one-node cluster (partition ``debug``)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = Path(workdir)
        self.procs: list[subprocess.Popen[bytes]] = []
        self._saved_conf: bytes | None = None
        self._conf_written = False
        # slurmd's spool holds Unix sockets named after job steps, and a socket path has at
        # most 108 bytes: under pytest-xdist the test's own directory is too deep for job ids
        # of two digits ("Unix socket path ... is too long", then "launch failed requeued
        # held"), so the spool gets a short directory of its own
        self.spool = Path(tempfile.mkdtemp(prefix="ck-slurmd-", dir="/tmp"))

    def __enter__(self) -> SlurmCluster:
        ensure_packages()
        if os.geteuid() != 0:
            raise SlurmUnavailable("starting slurmctld and slurmd needs root")
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        for d in ("state", "spool", "log"):
            (self.dir / d).mkdir(exist_ok=True)
        conf = f"""\
ClusterName=canarykit-test
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={self.dir}/state
SlurmdSpoolDir={self.spool}
SlurmctldPidFile={self.dir}/slurmctld.pid
SlurmdPidFile={self.dir}/slurmd.pid
SlurmctldLogFile={self.dir}/log/slurmctld.log
SlurmdLogFile={self.dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
{_node_line()}
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
        CONF.parent.mkdir(parents=True, exist_ok=True)
        if CONF.exists():
            self._saved_conf = CONF.read_bytes()
        CONF.write_text(conf)
        self._conf_written = True
        for d in ("/run/munge", "/var/lib/munge", "/var/log/munge"):
            Path(d).mkdir(parents=True, exist_ok=True)
            shutil.chown(d, "munge", "munge")
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True, timeout=60)
            shutil.chown(key, "munge", "munge")
            key.chmod(0o400)
        log = open(self.dir / "log" / "daemons.log", "ab")  # noqa: SIM115 - closed with the daemons
        self._log = log
        self.procs.append(subprocess.Popen(
            ["setpriv", "--reuid", "munge", "--regid", "munge", "--init-groups", "munged", "-F", "--force"],
            stdout=log, stderr=log))
        self._wait(lambda: Path("/run/munge/munge.socket.2").exists(), "munged")
        self.procs.append(subprocess.Popen(["slurmctld", "-D", "-i"], stdout=log, stderr=log))
        self._wait(lambda: subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30).stdout.count("UP") > 0,
                   "slurmctld")
        self.procs.append(subprocess.Popen(["slurmd", "-D", "-N", "localhost"], stdout=log, stderr=log))
        self._wait(self._node_idle, "slurmd (node localhost idle)")

    @staticmethod
    def _node_idle() -> bool:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, timeout=30).stdout
        return any(line.split()[1].startswith("idle") for line in out.splitlines() if len(line.split()) == 2)

    def _wait(self, ready, what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise SlurmUnavailable(f"{what}: a daemon exited ({p.args[0]}, status {p.returncode}); see {self.dir}/log")
            try:
                if ready():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.5)
        raise SlurmUnavailable(f"{what} not ready after {timeout_s:.0f} s; see {self.dir}/log")

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.procs):  # slurmd, slurmctld, munged: each by its PID
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
        self.procs.clear()
        if getattr(self, "_log", None) is not None:
            self._log.close()
        shutil.rmtree(self.spool, ignore_errors=True)
        if self._conf_written:
            if self._saved_conf is not None:
                CONF.write_bytes(self._saved_conf)
            else:
                CONF.unlink(missing_ok=True)
