"""The scale class of bench/compare (--class scale): start-up time and memory
per process against the number of ranks, for bitmover, Open MPI and MPICH
in the same run, interleaved.

  * one host: N = 2, 8, 16, 32, 64 ranks (--scale-ranks), oversubscribed, and
    every launcher told so (bmrun needs nothing on its own host; mpirun gets
    --oversubscribe; hydra oversubscribes by default);
  * several hosts: 4 and 8 network namespaces (--scale-hosts) joined by a
    bridge, --scale-ppn ranks in each: bmrun starts a daemon per namespace
    through 'ip netns exec', mpirun an orted per namespace through its rsh
    agent, hydra a proxy per namespace through its ssh launcher. The
    namespaces share this machine's cores, so waiting ranks are told to
    yield (BM_PML_IDLE_YIELD=64, mpi_yield_when_idle 1; MPICH has no such
    switch), and they share its host name, so Open MPI runs self,tcp there
    (vader would pair ranks of different namespaces and crash).

Start-up is the wall time from launch to exit of bm_hello (MPI_Init,
MPI_Barrier, MPI_Finalize), the median of --scale-runs launches per point,
together with the CPU time the whole job used (user + system, of the launcher
and everything it started: a busy machine stretches wall time, CPU time much
less). Memory is one more run of bm_hello -M per point: per process, VmRSS,
Pss, and "total" (Pss without shared-memory pages plus the process's share of
the memory of the shared-memory files it maps). All stacks use their default
transports. Writes bench/out/scale.md, scale.json and scale.png, and with
--update-docs the measured section of docs/scaling.md."""
import json
import os
import re
import resource
import shutil
import statistics
import time

STACKS = ("bitmover", "openmpi", "mpich")
TITLES = {"bitmover": "bitmover (bmrun)", "openmpi": "Open MPI 4.1 (mpirun)",
          "mpich": "MPICH 4.0 (mpiexec.hydra)"}
MEM_RE = re.compile(r"(rss|pss|shm-size|shm-rss|shm-alloc|total) (\d+)/(\d+)")


class Hosts:
    """k network namespaces on one bridge (in a namespace of its own, so the
    host's network is untouched), with the launch agents of the three
    launchers. down() removes everything."""

    def __init__(self, k, outdir, run):
        tag = "bms%d" % (os.getpid() % 10000)
        self.k, self.run = k, run
        self.ns = ["%sh%d" % (tag, i) for i in range(k)]
        self.sw = tag + "sw"
        self.subnet = "10.252.%d" % (os.getpid() % 250)
        self.dir = os.path.join(outdir, "scale-agents")
        self.agent = os.path.join(self.dir, "ns-agent.sh")   # mpirun's rsh agent
        self.hydra = os.path.join(self.dir, "ns-hydra.sh")   # hydra's ssh stand-in

    def up(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(self.agent, "w") as f:
            f.write("#!/bin/sh\n# mpirun's launch agent: run a command line in namespace $1.\n"
                    "ns=$1; shift\nmkdir -p /tmp/$ns\n"
                    "exec ip netns exec \"$ns\" env TMPDIR=/tmp/$ns /bin/sh -c \"$*\"\n")
        with open(self.hydra, "w") as f:
            f.write("#!/bin/sh\n# hydra's ssh launcher stand-in: skip ssh options, then the\n"
                    "# host (a namespace) and the command line.\n"
                    "while [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                    "ns=$1; shift\nexec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n")
        for p in (self.agent, self.hydra):
            os.chmod(p, 0o755)
        cmds = ["ip netns add " + self.sw,
                "ip -n %s link add br0 type bridge" % self.sw,
                "ip -n %s link set br0 up" % self.sw]
        for i, ns in enumerate(self.ns):
            a, b = "v%d" % i, "s%d" % i
            cmds += ["ip netns add " + ns,
                     "ip -n %s link add %s type veth peer name %s netns %s" % (
                         self.sw, b, a, ns),
                     "ip -n %s link set %s master br0" % (self.sw, b),
                     "ip -n %s link set %s up" % (self.sw, b),
                     "ip -n %s addr add %s.%d/24 dev %s" % (ns, self.subnet, i + 1, a),
                     "ip -n %s link set %s up" % (ns, a),
                     "ip -n %s link set lo up" % ns]
        for c in cmds:
            rc, out, err, _ = self.run(c.split(), 30)
            if rc != 0:
                self.down()
                return "cannot set up %d namespace hosts (%s): %s" % (self.k, c,
                                                                      (err or out).strip())
        return None

    def down(self):
        for ns in self.ns + [self.sw]:
            self.run(["ip", "netns", "del", ns], 30)
            shutil.rmtree("/tmp/" + ns, ignore_errors=True)


def command(stack, tools, exe, np, args, hosts, ppn, ompi_root):
    """The launch command of one stack: on this host, or across hosts."""
    if stack == "bitmover":
        if hosts:
            # The namespaces share this machine's cores: waiting ranks must
            # yield as on an oversubscribed host (bmrun sees ppn ranks per
            # "host" and would let them spin).
            return (["ip", "netns", "exec", hosts.ns[0], tools["bmrun"], "-n", str(np),
                     "--host", ",".join("%s:%d" % (h, ppn) for h in hosts.ns),
                     "--launch-agent", "ip netns exec {host}", "-x", "BM_PML_IDLE_YIELD=64",
                     exe] + args)
        return [tools["bmrun"], "-n", str(np), "--oversubscribe", exe] + args
    if stack == "openmpi":
        if hosts:
            return (["ip", "netns", "exec", hosts.ns[0], "mpirun.openmpi"] + ompi_root +
                    ["-np", str(np), "--host", ",".join("%s:%d" % (h, ppn) for h in hosts.ns),
                     "--bind-to", "none", "--mca", "plm_rsh_agent", hosts.agent,
                     "--mca", "routed", "direct", "--mca", "oob_tcp_if_include",
                     hosts.subnet + ".0/24", "--mca", "btl_tcp_if_include",
                     hosts.subnet + ".0/24", "--mca", "mpi_yield_when_idle", "1",
                     # Every namespace has the machine's host name, so vader
                     # would pair ranks of different "hosts" and crash.
                     "--mca", "btl", "self,tcp", exe] + args)
        return ["mpirun.openmpi"] + ompi_root + ["-np", str(np), "--oversubscribe", exe] + args
    if hosts:
        return (["ip", "netns", "exec", hosts.ns[0], "mpiexec.hydra", "-n", str(np),
                 "-hosts", ",".join("%s:%d" % (h, ppn) for h in hosts.ns),
                 "-launcher", "ssh", "-launcher-exec", hosts.hydra,
                 "-localhost", hosts.subnet + ".1", "-iface", "v0", exe] + args)
    return ["mpiexec.mpich", "-n", str(np), exe] + args


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(cmd, env, run, timeout):
    """(wall s, cpu s, output, error): CPU of every process the command ran,
    from the rusage of reaped children (the launcher reaps its own)."""
    c0 = children_cpu()
    rc, out, err, secs = run(cmd, timeout, env=env)
    cpu = children_cpu() - c0
    if rc is None:
        return None, None, out, "timed out after %d s" % timeout
    if rc != 0 or "bm_hello:" not in out:
        return None, None, out, "exit %s: %s" % (rc, (err or out).strip().splitlines()[-1:])
    return secs, cpu, out, None


def measure(points, stacks, tools, outdir, opts, run, log, ompi_root):
    """points: [(label, np, hosts or None, ppn)] -> results[stack][label]."""
    res = {s: {} for s in stacks}
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    timeout = opts.timeout
    for label, np, hosts, ppn in points:
        samples = {s: [] for s in stacks}
        errors = {}
        for rep in range(opts.scale_runs):
            for s in stacks:
                if s in errors:
                    continue
                exe = os.path.join(outdir, s, "bm_hello")
                wall, cpu, out, err = one(command(s, tools, exe, np, [], hosts, ppn, ompi_root),
                                          env, run, timeout)
                if err:
                    errors[s] = err
                    log("scale %-8s %-10s %s" % (s, label, err))
                else:
                    samples[s].append((wall, cpu))
        for s in stacks:
            r = {"np": np, "hosts": hosts.k if hosts else 1}
            if samples[s]:
                r["wall_ms"] = statistics.median(w for w, _ in samples[s]) * 1e3
                r["cpu_ms"] = statistics.median(c for _, c in samples[s]) * 1e3
                r["runs"] = len(samples[s])
                exe = os.path.join(outdir, s, "bm_hello")
                _, _, out, err = one(command(s, tools, exe, np, ["-M"], hosts, ppn, ompi_root),
                                     env, run, timeout)
                for k, avg, mx in MEM_RE.findall(out or ""):
                    r[k] = int(avg)
                    r[k + "_max"] = int(mx)
                if err:
                    r["mem_error"] = err
            else:
                r["error"] = errors.get(s, "no run")
            res[s][label] = r
        log("scale %s done: %s" % (label, ", ".join(
            "%s %.0f ms" % (s, res[s][label]["wall_ms"]) for s in stacks
            if "wall_ms" in res[s][label])))
    return res


def table(res, labels, stacks):
    head = "| ranks | hosts | " + " | ".join(
        "%s start-up ms (CPU ms) | %s total / Pss / RSS kB" % (s, s) for s in stacks) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(stacks))]
    for label in labels:
        any_r = next(res[s][label] for s in stacks)
        row = ["%d" % any_r["np"], "%d" % any_r["hosts"]]
        for s in stacks:
            r = res[s][label]
            if "wall_ms" not in r:
                row += ["-- (%s)" % r.get("error", "?")[:60], "--"]
                continue
            row.append("%.0f (%.0f)" % (r["wall_ms"], r["cpu_ms"]))
            row.append("%s / %s / %s" % (r.get("total", "?"), r.get("pss", "?"),
                                         r.get("rss", "?")))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def ratios(res, labels):
    out = []
    for label in labels:
        b = res["bitmover"].get(label, {})
        parts = []
        for peer in ("mpich", "openmpi"):
            p = res.get(peer, {}).get(label, {})
            if "wall_ms" in b and "wall_ms" in p:
                parts.append("start-up %.2fx %s" % (b["wall_ms"] / p["wall_ms"], peer))
            if "total" in b and "total" in p and p["total"]:
                parts.append("memory %.2fx %s" % (b["total"] / p["total"], peer))
        if parts:
            out.append("- %s: %s" % (label, ", ".join(parts)))
    # The goal's second half: start-up grows at most linearly from 8 ranks
    # (or the smallest count of at least 8) to the largest, on one host.
    one = sorted((res["bitmover"].get(l, {}).get("np", 0), l) for l in labels
                 if l.startswith("1x"))
    one = [x for x in one if x[0] >= 8]
    if len(one) >= 2:
        (n0, l0), (n1, l1) = one[0], one[-1]
        parts = []
        for s in STACKS:
            a, b = res.get(s, {}).get(l0, {}), res.get(s, {}).get(l1, {})
            if a.get("wall_ms") and b.get("wall_ms"):
                parts.append("%s %.1fx wall (%.1fx CPU)" % (
                    s, b["wall_ms"] / a["wall_ms"],
                    b["cpu_ms"] / a["cpu_ms"] if a.get("cpu_ms") else float("nan")))
        if parts:
            out.append("- growth %s -> %s (%.0fx the ranks): %s" % (l0, l1, n1 / n0,
                                                                    ", ".join(parts)))
    return "\n".join(out)


def plot(res, labels, stacks, outdir, png, run, pngcairo):
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed (Debian: gnuplot-nox)"
    one_host = [l for l in labels if l.startswith("1x")]
    datas = []
    for s in stacks:
        path = os.path.join(outdir, "scale-%s.dat" % s)
        with open(path, "w") as f:
            f.write("# ranks wall_ms cpu_ms total_kB pss_kB\n")
            for l in one_host:
                r = res[s].get(l, {})
                if "wall_ms" in r:
                    f.write("%d %g %g %s %s\n" % (r["np"], r["wall_ms"], r["cpu_ms"],
                                                  r.get("total", "NaN"), r.get("pss", "NaN")))
        datas.append((path, TITLES[s]))
    gp = ["set terminal pngcairo size 1400,560 font ',10'" if pngcairo else
          "set terminal png size 1400,560",
          "set output '%s'" % png, "set multiplot layout 1,2", "set grid",
          "set key top left font ',8'", "set xlabel 'ranks on one host (oversubscribed)'",
          "set title 'start-up: launch to exit of Init+Barrier+Finalize (median)'",
          "set ylabel 'ms'",
          "plot " + ", ".join("'%s' using 1:2 with linespoints title '%s'" % (p, t)
                              for p, t in datas),
          "set title 'memory per process (Pss without shm + share of shm files)'",
          "set ylabel 'kB'",
          "plot " + ", ".join("'%s' using 1:4 with linespoints title '%s'" % (p, t)
                              for p, t in datas),
          "unset multiplot"]
    script = os.path.join(outdir, "scale.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    rc, out, err, _ = run(["gnuplot", script], 60)
    return None if rc == 0 else "gnuplot failed: " + (err or out).strip()


def run_class(opts, tools, outdir, stack_ok, run, log, pngcairo, ompi_root, root):
    """Measures, writes scale.md/json/png; returns the markdown text."""
    stacks = [s for s in STACKS if stack_ok.get(s) is None]
    for s in STACKS:
        if stack_ok.get(s):
            log("scale: %s cannot run: %s" % (s, stack_ok[s]))
    ranks = [int(x) for x in opts.scale_ranks.split(",") if x]
    nhosts = [int(x) for x in opts.scale_hosts.split(",") if x]
    points = [("1x%d" % n, n, None, 0) for n in ranks]
    t0 = time.monotonic()
    res = measure(points, stacks, tools, outdir, opts, run, log, ompi_root)
    labels = [p[0] for p in points]
    notes = []
    for k in nhosts:
        if os.geteuid() != 0:
            notes.append("%d hosts: skipped (network namespaces need root)" % k)
            continue
        h = Hosts(k, outdir, run)
        why = h.up()
        if why:
            notes.append("%d hosts: %s" % (k, why))
            continue
        try:
            label = "%dx%d" % (k, opts.scale_ppn)
            r = measure([(label, k * opts.scale_ppn, h, opts.scale_ppn)], stacks, tools, outdir,
                        opts, run, log, ompi_root)
            for s in stacks:
                res[s][label] = r[s][label]
            labels.append(label)
        finally:
            h.down()
    md = ("Start-up: median wall time of %d launches (CPU time of the whole job in "
          "parentheses); memory per process: total (Pss without shared-memory pages + share of "
          "the shared-memory files) / Pss / VmRSS, kB, one -M run. Rows 'KxP': K hosts "
          "(network namespaces), P ranks each.\n\n%s\n\n%s\n" %
          (opts.scale_runs, table(res, labels, stacks), ratios(res, labels)))
    if notes:
        md += "\n" + "\n".join("- " + n for n in notes) + "\n"
    png = os.path.join(outdir, "scale.png")
    perr = plot(res, labels, stacks, outdir, png, run, pngcairo)
    if perr:
        md += "\n(no plot: %s)\n" % perr
    with open(os.path.join(outdir, "scale.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(outdir, "scale.md"), "w") as f:
        f.write(md)
    log("scale class done in %.0f s: %s/scale.md" % (time.monotonic() - t0, outdir))
    if opts.update_docs:
        update_doc(os.path.join(root, "docs", "scaling.md"), md, png, root, perr)
    return md


def update_doc(path, md, png, root, perr):
    """Replaces the text between the markers of docs/scaling.md."""
    begin, end = "<!-- scale:begin -->", "<!-- scale:end -->"
    try:
        text = open(path).read()
    except OSError:
        return
    if begin not in text or end not in text:
        return
    if not perr:
        shutil.copy2(png, os.path.join(root, "docs", "img", "scaling.png"))
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    body = "%s\nMeasured %s by `bench/compare --class scale`, load %s.\n\n%s\n%s" % (
        begin, stamp, " ".join("%.1f" % x for x in os.getloadavg()), md, end)
    text = text[:text.index(begin)] + body + text[text.index(end) + len(end):]
    with open(path, "w") as f:
        f.write(text)
