"""A real two-host data-parallel job: two network namespaces ("hosts" A and B, 10.213.x.1 and
.2) joined by a veth pair, one `torchrun --nnodes 2 --nproc-per-node 1` on each (static
rendezvous at A's address, GLOO_SOCKET_IFNAME = each host's veth), running `stx train` on a
tiny byte-level LM with ONE run directory (both hosts share this machine's file system, as a
multi-host job needs shared storage). Checks: the gradients cross the veth (its byte counters,
the workers' TCP connections between the two addresses); the job's losses equal those of one
process with update_freq 2 (≤ 1e-5 relative, as test_distributed.py); kill -9 of host B's stx
worker makes host A's stx exit 4 within train.dist_timeout_s, checkpoint_last intact
(safetensors_io + its CRC-32C checksums), and the job resumes on both hosts to the end with
every loss equal to the uninterrupted two-host job's. The namespaces are always removed.
Without root, `ip` or network namespaces: prints `SKIP: reason` and exits 0.
Run: python3 tests/cli/test_two_host.py build/stx"""
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from checks import ROOT, Checks, cut_moby, metrics, wait_for_step  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import safetensors_io  # noqa: E402

STX = os.path.abspath(sys.argv[1])
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")
DROP = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME",
        "STX_THREADS")
ENV = {k: v for k, v in os.environ.items() if k not in DROP and not k.startswith("TORCHELASTIC_")}
ENV["OMP_NUM_THREADS"] = "1"  # torchrun sets it for its workers; stx takes it as its thread count
TIMEOUT_S = 8  # train.dist_timeout_s of every job here
# The worker under torchrun: stx, then its exit status and the time it ended into $STX_RC_FILE
# (torchrun reports its worker's status only in its own error report and exits 1 itself).
WRAP = 'S=0; "$0" "$@" || S=$?; echo "$S $(date +%s.%N)" > "$STX_RC_FILE.tmp" && mv "$STX_RC_FILE.tmp" "$STX_RC_FILE"; exit $S'


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(0)


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


class Hosts:
    """Two network namespaces joined by a veth pair; remove() takes everything down again."""

    def __init__(self):
        pid = os.getpid()
        self.ns = [f"stx2h-a-{pid}", f"stx2h-b-{pid}"]
        self.ifname = [f"stx2a{pid}", f"stx2b{pid}"]  # ≤ 15 characters (pids < 10⁸)
        net = f"10.213.{pid % 250 + 1}"
        self.addr = [f"{net}.1", f"{net}.2"]
        self.made = []

    def make(self):
        for ns in self.ns:
            ip("netns", "add", ns)
            self.made.append(ns)
        ip("link", "add", self.ifname[0], "type", "veth", "peer", "name", self.ifname[1])
        for ns, ifn, a in zip(self.ns, self.ifname, self.addr):
            ip("link", "set", ifn, "netns", ns)
            ip("-n", ns, "addr", "add", f"{a}/24", "dev", ifn)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", ifn, "up")
        for ns in self.ns:
            ip("netns", "exec", ns, "true")  # `ip netns exec` works here (it mounts /sys afresh)

    def remove(self):
        for ns in self.made:
            # Anything of ours still inside (a job a failed check left running) first, so the
            # namespace and its veth really go.
            for pid in ip("netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            ip("netns", "del", ns, check=False)
        ip("link", "del", self.ifname[0], check=False)  # if it never moved into a namespace
        self.made = []

    def exec(self, h, cmd, **kw):
        return subprocess.run(["ip", "netns", "exec", self.ns[h]] + cmd, capture_output=True, text=True,
                              timeout=30, **kw)

    def free_port(self):
        """A TCP port free on host A (where torchrun's agent hosts the store)."""
        r = self.exec(0, [sys.executable, "-c", "import socket; s = socket.socket(); s.bind(('', 0)); "
                                               "print(s.getsockname()[1])"])
        return int(r.stdout)

    def veth_bytes(self, h):
        """(tx, rx) bytes of host h's veth."""
        j = json.loads(ip("-j", "-s", "-n", self.ns[h], "link", "show", "dev", self.ifname[h]).stdout)[0]
        return j["stats64"]["tx"]["bytes"], j["stats64"]["rx"]["bytes"]


class Job:
    """One `torchrun --nnodes 2` per host, running `stx ARGS` (the same arguments on both)."""

    def __init__(self, hosts, name, args, d):
        self.hosts, self.name = hosts, name
        self.port = hosts.free_port()
        self.rc_file = [os.path.join(d, f"{name}-{h}.rc") for h in "ab"]
        self.log = [os.path.join(d, f"{name}-{h}.log") for h in "ab"]
        self.procs = []
        for h in (0, 1):
            env = dict(ENV, GLOO_SOCKET_IFNAME=hosts.ifname[h], STX_RC_FILE=self.rc_file[h])
            cmd = ["ip", "netns", "exec", hosts.ns[h], TORCHRUN, "--nnodes", "2", "--nproc-per-node", "1",
                   "--node-rank", str(h), "--master-addr", hosts.addr[0], "--master-port", str(self.port),
                   "--rdzv-backend", "static", "--rdzv-conf", "timeout=60", "--max-restarts", "0",
                   "--no-python", "sh", "-c", WRAP, STX] + args
            with open(self.log[h], "w") as log:
                self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL))

    def wait(self, timeout=120):
        """torchrun's exit status on each host (None: still running at the timeout, then killed)."""
        end, codes = time.time() + timeout, []
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=max(1, end - time.time())))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                codes.append(None)
        return codes

    def stx_status(self, h):
        """(exit status, time it ended) of host h's stx, or None if it has not ended."""
        try:
            with open(self.rc_file[h]) as f:
                s, t = f.read().split()
            return int(s), float(t)
        except (FileNotFoundError, ValueError):
            return None

    def output(self, h):
        with open(self.log[h], errors="replace") as f:
            return f.read()

    def worker_pid(self, h, out_dir, timeout=60):
        """The pid of host h's stx process (its worker, below torchrun and the wrapper)."""
        end = time.time() + timeout
        while time.time() < end:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                    if argv[0] != STX.encode() or out_dir.encode() not in argv:
                        continue
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        if f"GROUP_RANK={h}".encode() in f.read().split(b"\0"):
                            return int(pid)
                except OSError:
                    pass
            time.sleep(0.05)
        return None


def tcp_connections(pid):
    """(local address, remote address) of each established TCP connection of process pid, from
    /proc/PID/net/tcp{,6} (the tables of its network namespace) and its socket descriptors."""
    def addr(field):
        raw = bytes.fromhex(field.split(":")[0])
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # 32-bit words, host order
        a = ipaddress.ip_address(raw)
        return str(getattr(a, "ipv4_mapped", None) or a)

    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    conns = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for row in f.read().splitlines()[1:]:
                col = row.split()
                if col[3] == "01" and col[9] in inodes:  # 01: ESTABLISHED
                    conns.append((addr(col[1]), addr(col[2])))
    return conns


def train_losses(run_dir):
    return {m["step"]: m["loss"] for m in metrics(run_dir) if "loss" in m}


def max_rel_diff(a, b):
    return max(abs(a[s] - b[s]) / abs(a[s]) for s in a)


def crc32c(data, _table=[]):
    if not _table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _table.append(c)
    c = 0xFFFFFFFF
    for b in data:
        c = _table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def checkpoint_problems(path):
    """What is wrong with an stx checkpoint, read independently of stx: the safetensors layout
    (tests/ref/safetensors_io.py), every tensor's CRC-32C against stx.crc32c, finite values."""
    try:
        header, meta, start, _ = safetensors_io.read_header(path)
        tensors, _ = safetensors_io.load(path)
    except Exception as e:  # noqa: BLE001
        return [str(e)], None
    problems = []
    crcs = json.loads(meta.get("stx.crc32c", "{}"))
    with open(path, "rb") as f:
        f.seek(start)
        buf = f.read()
    if set(crcs) != set(header):
        problems.append(f"checksums for {len(crcs)} of {len(header)} tensors")
    for name, e in header.items():
        b, end = e["data_offsets"]
        if name in crcs and crcs[name][0] != f"{crc32c(buf[b:end]):08x}":
            problems.append(f"{name}: CRC-32C mismatch")
        t = tensors[name]
        if t.is_floating_point() and not bool(t.isfinite().all()):
            problems.append(f"{name}: non-finite values")
    step = json.loads(meta.get("stx.train", "{}")).get("step")
    return problems, step


def main():
    check = Checks()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout's SIGTERM still removes the namespaces
    if os.geteuid() != 0:
        skip("network namespaces need root (this runs as uid %d)" % os.geteuid())
    if not shutil.which("ip"):
        skip("no `ip` (iproute2) to make network namespaces")
    if not os.path.exists(TORCHRUN):
        check("torchrun is installed beside the tests' python", False, TORCHRUN)
        check.finish()
    hosts = Hosts()
    try:
        hosts.make()
    except subprocess.CalledProcessError as e:
        hosts.remove()
        skip(f"cannot make two network namespaces joined by a veth pair: `{' '.join(e.cmd)}`: "
             f"{(e.stderr or '').strip()}")
    try:
        print(f"     (host A: {hosts.ns[0]} {hosts.addr[0]} on {hosts.ifname[0]}; "
              f"host B: {hosts.ns[1]} {hosts.addr[1]} on {hosts.ifname[1]})")
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as d:
            try:
                run_checks(check, hosts, d)
            finally:
                hosts.remove()  # first: then nothing of ours still writes into d
    finally:
        hosts.remove()
        left = ip("netns", "list", check=False).stdout
        check("the namespaces and the veth pair are removed",
              not any(ns in left for ns in hosts.ns)
              and ip("link", "show", hosts.ifname[0], check=False).returncode != 0, left)
    check.finish()


def run_checks(check, hosts, d):
    t_start = time.time()
    # A byte-level LM (no SentencePiece to train) on 400 lines of the embedded Moby-Dick.
    corpus = cut_moby(os.path.join(d, "lm"), {"train": 400, "valid": 30})
    steps = 40
    tiny = ["--config", os.path.join(ROOT, "configs", "atlas.yaml"), "--set", f"data.corpus={corpus}",
            "--set", "model.d_model=32", "--set", "model.d_ff=64", "--set", "model.n_heads=2",
            "--set", "model.decoder_layers=2", "--set", "model.max_len=64", "--set", "train.max_tokens=1024",
            "--set", f"train.max_steps={steps}", "--set", "train.warmup_steps=5", "--set", "train.log_every=1",
            "--set", f"train.eval_every={steps}", "--set", "train.checkpoint_every=5",
            "--set", "train.valid_sentences=10", "--set", "train.probe_sentences=4",
            "--set", f"train.dist_timeout_s={TIMEOUT_S}"]

    # 1. The reference: one process, both batches of each update (update_freq 2).
    one = os.path.join(d, "one")
    r = subprocess.run([STX, "train", "--out", one, "--quiet", "--set", "train.update_freq=2"] + tiny,
                       capture_output=True, text=True, timeout=300, env=dict(ENV, STX_THREADS="1"))
    if not check("1 process, update_freq 2: exit 0", r.returncode == 0, r.stderr[-1500:]):
        return
    # … and the same job on one host over loopback (--nproc 2), which the two hosts must match bit for bit.
    loop = os.path.join(d, "loopback")
    r = subprocess.run([STX, "train", "--out", loop, "--quiet", "--nproc", "2"] + tiny,
                       capture_output=True, text=True, timeout=300, env=dict(ENV, STX_THREADS="1"))
    check("--nproc 2 on one host (loopback): exit 0", r.returncode == 0, r.stderr[-1500:])

    # 2. The two-host job, one batch per host per update: the same losses, over the veth.
    two = os.path.join(d, "two")
    before = [hosts.veth_bytes(h) for h in (0, 1)]
    t0 = time.time()
    job = Job(hosts, "two", ["train", "--out", two] + tiny, d)
    codes = job.wait()
    took = time.time() - t0
    st = [job.stx_status(h) for h in (0, 1)]
    ok = check("two-host job: torchrun and stx exit 0 on both hosts",
               codes == [0, 0] and [s and s[0] for s in st] == [0, 0],
               (codes, st, job.output(0)[-1500:], job.output(1)[-1500:]))
    if not ok:
        return
    print(f"     (two hosts: {steps} updates in {took:.1f} s, torchrun start to end)")
    after = [hosts.veth_bytes(h) for h in (0, 1)]
    sent = [after[h][0] - before[h][0] for h in (0, 1)]
    # The gradient all-reduced each update: every parameter in float32 (the model's tensors in
    # the checkpoint). A two-rank ring all-reduce of B bytes sends B from each rank (half in the
    # reduce-scatter, half in the all-gather).
    tensors, _ = safetensors_io.load(os.path.join(two, "checkpoint_last.safetensors"))
    grads = sum(t.numel() * t.element_size() for name, t in tensors.items() if name.startswith("model."))
    check("the gradients crossed the veth: each host sent ≥ 0.9 × the gradient bytes of every update",
          min(sent) >= 0.9 * steps * grads, (sent, steps, grads))
    print(f"     (veth: A sent {sent[0] / 1e6:.2f} MB, B sent {sent[1] / 1e6:.2f} MB; "
          f"{steps} updates × {grads / 1e6:.4f} MB of gradients = {steps * grads / 1e6:.2f} MB)")
    a, b = train_losses(one), train_losses(two)
    check(f"a loss for each of the {steps} updates, written once (rank 0 only)",
          sorted(a) == list(range(1, steps + 1)) and [x["step"] for x in metrics(two) if "loss" in x]
          == list(range(1, steps + 1)), sorted(b))
    if sorted(a) == sorted(b):
        rel = max_rel_diff(a, b)
        print(f"     (max relative loss difference, two hosts vs 1 process, over {steps} updates: {rel:.2e}; "
              f"loss {a[1]:.4f} → {a[steps]:.4f})")
        check("two hosts = 1 process with update_freq 2 (≤ 1e-5 relative)", rel <= 1e-5, f"{rel:.3e}")
        check("it is a trajectory (loss falls)", a[steps] < a[1], (a[1], a[steps]))
    if os.path.exists(os.path.join(loop, "metrics.jsonl")):
        lo = train_losses(loop)
        check("two hosts = --nproc 2 on one host: every loss bit for bit", lo == b,
              [(s, lo.get(s), b.get(s)) for s in lo if lo.get(s) != b.get(s)][:4])
    va = [x["valid_loss"] for x in metrics(one) if "valid_loss" in x]
    vb = [x["valid_loss"] for x in metrics(two) if "valid_loss" in x]
    check("same validation loss", len(va) == len(vb) == 1 and abs(va[0] - vb[0]) <= 1e-5 * va[0], (va, vb))

    # 3. kill -9 of host B's stx after a checkpoint: host A's stx exits 4 within the timeout,
    #    the checkpoint is intact, and the job resumes on both hosts to the same losses.
    k = os.path.join(d, "killed")
    job = Job(hosts, "killed", ["train", "--out", k, "--quiet"] + tiny, d)
    pid_a, pid_b = job.worker_pid(0, k), job.worker_pid(1, k)
    check("found each host's stx worker", None not in (pid_a, pid_b), (pid_a, pid_b))
    if None in (pid_a, pid_b):
        job.wait(5)
        return
    wait_for_step(job.procs[0], k, 6)  # checkpoint_every 5: step 5's checkpoint is written
    try:
        conns = tcp_connections(pid_a)
    except OSError as e:
        conns = [str(e)]
    cross = [c for c in conns if c == (hosts.addr[0], hosts.addr[1])]
    check(f"host A's stx talks to host B over the veth: {len(cross)} TCP connection(s) "
          f"{hosts.addr[0]} ↔ {hosts.addr[1]}", bool(cross), conns)
    t_kill = time.time()
    try:
        os.kill(pid_b, signal.SIGKILL)
    except ProcessLookupError:
        pass
    codes = job.wait(TIMEOUT_S + 60)
    st = [job.stx_status(h) for h in (0, 1)]
    last = max((x["step"] for x in metrics(k) if "loss" in x), default=0)
    check(f"the kill came after a checkpoint and before the end (at step {last} of {steps})", 6 <= last < steps, last)
    check("host B's stx was the process killed by signal 9 (status 137)", st[1] is not None and st[1][0] == 137,
          (st[1], job.output(1)[-800:]))
    took = st[0][1] - t_kill if st[0] else None
    ok = check(f"host A's stx exits 4 within train.dist_timeout_s = {TIMEOUT_S} s + 2 s"
               + (f" (took {took:.2f} s)" if took is not None else ""),
               st[0] is not None and st[0][0] == 4 and took <= TIMEOUT_S + 2,
               (st[0], took, [ln for ln in job.output(0).splitlines() if ln.startswith("stx:")]))
    err = [ln for ln in job.output(0).splitlines() if ln.startswith("stx: error:")]
    check("host A's stx says why in one line (rank 0, a collective failed)",
          len(err) == 1 and "rank 0" in err[0] and "failed" in err[0],
          [ln for ln in job.output(0).splitlines() if ln.startswith("stx:")])
    check("torchrun fails on both hosts (exit non-zero) and names the worker's exit code 4 on A",
          None not in codes and 0 not in codes and re.search(r"exitcode\s*:\s*4\b", job.output(0)) is not None,
          (codes, re.findall(r"exitcode\s*:.*", job.output(0))))
    if took is not None:
        print(f"     (kill -9 of host B's stx at step {last}: host A's stx exited {st[0][0]} after {took:.2f} s; "
              f"torchrun exited {codes[0]} on A, {codes[1]} on B)")
    for ln in err:
        print(f"     (host A: {ln})")
    problems, ck_step = checkpoint_problems(os.path.join(k, "checkpoint_last.safetensors"))
    check(f"checkpoint_last is intact (safetensors layout, CRC-32C of every tensor; step {ck_step})",
          not problems and isinstance(ck_step, int) and 5 <= ck_step <= last and ck_step % 5 == 0,
          (problems[:4], ck_step))
    job = Job(hosts, "resumed", ["train", "--out", k, "--resume", "--quiet"], d)
    codes = job.wait()
    st = [job.stx_status(h) for h in (0, 1)]
    ok = check("the killed job resumes on both hosts to the end (exit 0)",
               codes == [0, 0] and [s and s[0] for s in st] == [0, 0],
               (codes, st, job.output(0)[-1500:], job.output(1)[-1500:]))
    if ok:
        ref, got = train_losses(two), train_losses(k)
        check(f"killed + resumed job: every loss of the {steps} updates equals the uninterrupted two-host job's",
              ref == got, [(s, ref.get(s), got.get(s)) for s in ref if ref.get(s) != got.get(s)][:4])
    print(f"     (whole test: {time.time() - t_start:.1f} s)")


if __name__ == "__main__":
    main()
