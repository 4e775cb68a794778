"""bench/compare's threads class (--class threads): MPI_THREAD_MULTIPLE and
waiting, bitmover next to Open MPI and MPICH over shared memory.

Benchmarks (each one run per configuration and repeat, interleaved):
  mt-lat-N    bm_mt_latency -p N: N thread pairs ping-pong at once, each on a
              communicator of its own; the mean half round trip of 8 B
  mt-mr-N     bm_mt_mr -p N: N thread pairs stream windows of 64 8-byte
              messages, each on its own communicator; aggregate messages/s
  mt-bw-PN    bm_mt_mr -p N -P -v -m 256k: N threads of rank 0 each stream
              windows of 8 messages of 256 KiB, a vector of 8-byte blocks, to
              a peer rank of their own (ranks 1..N: rendezvous sends to
              different peers at once, packed FRAGs under the per-peer send
              state; a contiguous message would be a single-copy RGET over
              sm, which the receiver reads); aggregate MB/s
  barrier-M   bm_barrier on 8 ranks (more than this machine's cores): a loop
              of MPI_Barrier; for bitmover once with BM_PML_WAIT_MODE=spin and
              once with block, for the peers as they are installed

Goals (issue 18): the single-pair latency under MPI_THREAD_MULTIPLE at most
0.8x the best peer's; the rate of 2 and 4 pairs at least 0.9x that of one
pair (no collapse under contention) and at least the best peer's; the
oversubscribed barrier loop at least 3x faster with block than with spin.
bench/compare imports this file; it only adds the table."""

PAIRS = [1, 2, 4]
PEER_PAIRS = [1, 2]
PEER_SIZE = 256 << 10
BENCHES = (["mt-lat-%d" % p for p in PAIRS] + ["mt-mr-%d" % p for p in PAIRS] +
           ["mt-bw-P%d" % p for p in PEER_PAIRS] + ["barrier-spin", "barrier-block"])
PROGRAMS = ["mt_latency", "mt_mr", "barrier"]
BARRIER_RANKS = 8
BARRIER_STEPS = 300


def program_of(bench):
    if bench.startswith("mt-lat-"):
        return "mt_latency"
    if bench.startswith("mt-mr-") or bench.startswith("mt-bw-"):
        return "mt_mr"
    return "barrier"


def applies(bench, cfg):
    """Shared memory only; the spin/block pair is bitmover's own switch, so
    the peers run the barrier loop once (as barrier-block's column)."""
    if cfg.cls != "sm" or cfg.net:
        return False
    if bench == "barrier-spin":
        return cfg.stack == "bitmover"
    return True


# Seconds each thread pair may spend on its timed loop (bm_mt_* -t): a stack
# that takes milliseconds per iteration with several pairs (Open MPI's
# ping-pong with 2 pairs took about 3 ms per iteration on this machine)
# runs fewer iterations, at least 10, instead of a minute per run; the
# fastest stacks still run the full count. The table shows the result
# either way, and the raw output the count each run used.
PAIR_BUDGET = 2.0
PAIR_BUDGET_QUICK = 0.5


def args(bench, opts):
    budget = ["-t", str(PAIR_BUDGET_QUICK if opts.quick else PAIR_BUDGET)]
    if bench.startswith("mt-lat-"):
        return ["-p", bench.split("-")[2], "-m", "8:8",
                "-i", "2000" if opts.quick else "20000"] + budget
    if bench.startswith("mt-mr-"):
        return ["-p", bench.split("-")[2], "-m", "8:8",
                "-i", "500" if opts.quick else "2000"] + budget
    if bench.startswith("mt-bw-P"):
        return ["-p", bench[len("mt-bw-P"):], "-P", "-v", "-m", str(PEER_SIZE), "-W", "8",
                "-i", "20" if opts.quick else "100"] + budget
    return ["-i", str(BARRIER_STEPS)]


def ranks(bench):
    if bench.startswith("mt-bw-P"):
        return 1 + int(bench[len("mt-bw-P"):])
    return BARRIER_RANKS if bench.startswith("barrier-") else 2


def env(bench, cfg):
    if cfg.stack == "bitmover" and bench.startswith("barrier-"):
        return {"BM_PML_WAIT_MODE": bench.split("-")[1]}
    return {}


def _value(summary, cfg, bench):
    t = summary.get(cfg.name, {}).get(bench)
    if not t:
        return None
    key = BARRIER_RANKS if bench.startswith("barrier-") else \
        PEER_SIZE if bench.startswith("mt-bw-") else 8
    if key not in t:
        return None
    if bench.startswith("mt-mr-"):
        return t[key][0] / 1e6
    if bench.startswith("mt-bw-"):
        return t[key][0] * PEER_SIZE / 1e6
    if bench.startswith("barrier-"):
        return t[key][1]
    return t[key][0]


def _fmt(v):
    return "%.3f" % v if v < 10 else "%.1f" % v if v < 1000 else "%.0f" % v


def make_tables(configs, summary, errors, opts, peers_of):
    rows = [c for c in configs if any(applies(b, c) for b in BENCHES)]
    if not rows:
        return ""
    heads = (["lat %d pair%s" % (p, "s" if p > 1 else "") for p in PAIRS] +
             ["rate %d pair%s" % (p, "s" if p > 1 else "") for p in PAIRS] +
             ["vector to %d peer%s" % (p, "s" if p > 1 else "") for p in PEER_PAIRS] +
             ["barrier spin", "barrier block"])
    benches = ["mt-lat-%d" % p for p in PAIRS] + ["mt-mr-%d" % p for p in PAIRS] + \
        ["mt-bw-P%d" % p for p in PEER_PAIRS] + ["barrier-spin", "barrier-block"]
    out = ["| configuration | " + " | ".join(heads) + " |", "|" + "---|" * (len(heads) + 1)]
    for cfg in rows:
        cells = []
        for b in benches:
            if not applies(b, cfg):
                cells.append("-")
                continue
            v = _value(summary, cfg, b)
            if v is None:
                why = cfg.unavailable or errors.get(cfg.name, {}).get(b) or "no result"
                cells.append("n/a (%s)" % why[:100])
            else:
                cells.append(_fmt(v))
        out.append("| %s | %s |" % (cfg.title, " | ".join(cells)))
    out.append("")
    out.append("Latency: mean half round trip of 8 B over the pairs, us. Rate: million 8-byte "
               "messages per second, all pairs together (window 64). Vector to N peers: MB/s of "
               "rank 0's N threads together, each streaming windows of 8 messages of 256 KiB "
               "(a vector of 8-byte blocks 16 bytes apart) to a rank of its own (bm_mt_mr -P -v). "
               "Barrier: us per step of an "
               "MPI_Barrier loop on %d ranks (peers: as installed, in the block column; "
               "bitmover: BM_PML_WAIT_MODE=spin and block). Each thread pair's timed loop "
               "is capped at %g s (bm_mt_* -t: a stack slower than that runs fewer "
               "iterations, at least 10; the raw output gives the count)." %
               (BARRIER_RANKS, PAIR_BUDGET_QUICK if opts.quick else PAIR_BUDGET))
    out.append("")
    for bm in rows:
        if bm.stack != "bitmover":
            continue
        peers = [c for c in rows if c.base in peers_of.get(bm.base, [])]
        parts = []

        def best(bench, low):
            vals = [v for v in (_value(summary, p, bench) for p in peers) if v is not None]
            return (min(vals) if low else max(vals)) if vals else None

        lat1, plat = _value(summary, bm, "mt-lat-1"), best("mt-lat-1", True)
        if lat1 is not None and plat:
            r = lat1 / plat
            parts.append("1-pair latency %.2fx the best peer (goal <= 0.8x: %s)" %
                         (r, "met" if r <= 0.8 else "not met"))
        mr1 = _value(summary, bm, "mt-mr-1")
        for p in PAIRS[1:]:
            mrp = _value(summary, bm, "mt-mr-%d" % p)
            if mrp is None or not mr1:
                parts.append("rate with %d pairs: not measured" % p)
                continue
            r = mrp / mr1
            pb = best("mt-mr-%d" % p, False)
            text = "rate with %d pairs %.2fx one pair (goal >= 0.9x: %s)" % (
                p, r, "met" if r >= 0.9 else "not met")
            if pb:
                text += ", %.2fx the best peer (goal >= 1x: %s)" % (
                    mrp / pb, "met" if mrp >= pb else "not met")
            parts.append(text)
        bw1, bw2 = _value(summary, bm, "mt-bw-P1"), _value(summary, bm, "mt-bw-P2")
        if bw1 and bw2 is not None:
            text = "256 KiB vectors from 2 threads to 2 peers %.2fx one thread to one peer" % (
                bw2 / bw1)
            pb = best("mt-bw-P2", False)
            if pb:
                text += ", %.2fx the best peer" % (bw2 / pb)
            parts.append(text + " (no goal in the issue: the per-peer send state's scaling)")
        spin, block = _value(summary, bm, "barrier-spin"), _value(summary, bm, "barrier-block")
        if block is not None and spin is not None:
            r = spin / block
            parts.append("oversubscribed barrier loop %.1fx faster with block than spin "
                         "(goal >= 3x: %s)" % (r, "met" if r >= 3 else "not met"))
        elif block is not None:
            err = errors.get(bm.name, {}).get("barrier-spin", "")
            parts.append("oversubscribed barrier loop with spin: %s" % (err or "no result"))
        if parts:
            out.append("- %s against the best of %s: %s." % (
                bm.title, " and ".join(p.title for p in peers) or "no peer", "; ".join(parts)))
    out.append("")
    return "\n".join(out)
