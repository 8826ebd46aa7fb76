"""The atlas's statistics over seeds (docs/atlas.md#statistics), from atlas.json alone (no packages).

A run *learned* when its outcome is "trains" (docs/reference.md#run-outcomes): it ended below the
plateau cut (the corpus's unigram entropy − 0.1 bit) without a guard stop or a loss spike.
Its loss is its final validation bits per byte. A *cell* is (scheme, depth, rate) with warm-up;
its seeds are the runs that ended there.

Intervals: seeds k of two cells share the data order (train.seed + k), so differences are paired
by seed. With n = 3 seeds the interval is the min–max of the n paired differences; a difference
is *resolved* only when n ≥ 3 and every paired difference has the same sign (the interval
excludes 0), else it is "no difference". Nothing here is a p-value.
"""
import statistics

OLD_ENDED = ("converged", "stalled", "diverged")
NEW_ENDED = ("trains", "too slow", "stalls", "diverges", "spiked and recovered")
MIN_SEEDS = 3


class Atlas:
    def __init__(self, j):
        self.j = j
        self.U = j["unigram_entropy_bits"]
        self.cut = self.U - 0.1
        self.runs = j["runs"]
        self.schemes = j["plan"]["schemes"]
        self.rates = j["plan"]["lrs"]
        self.depths = j["plan"]["depths"]

    # --- one run ---------------------------------------------------------------------------------
    @staticmethod
    def ended(r):
        return r["outcome"] in OLD_ENDED or r["outcome"] in NEW_ENDED

    def learned(self, r):
        """It trains: ended below the cut without a guard stop or a loss spike (a run that spiked and
        recovered is reported per run, but is not a cell's loss: stx's atlas_summary.h)."""
        if not self.ended(r) or r["outcome"] in ("diverged", "diverges", "spiked and recovered"):
            return False
        if r["reading"].get("failure", "").startswith("loss spike"):
            return False
        b = r["reading"].get("final_bpb")
        return b is not None and b < self.cut

    def loss(self, r):
        return r["reading"]["final_bpb"] if self.learned(r) else None

    # --- cells -----------------------------------------------------------------------------------
    def seeds(self, scheme, depth, lr, warmup=True):
        """{seed: run} of the ended runs of a cell."""
        return {r["seed"]: r for r in self.runs if r["scheme"] == scheme and r["depth"] == depth
                and r["lr"] == lr and r["warmup"] == warmup and self.ended(r)}

    def cell(self, scheme, depth, lr):
        """(n ended, {seed: loss or None})."""
        s = self.seeds(scheme, depth, lr)
        return len(s), {k: self.loss(r) for k, r in sorted(s.items())}

    def full(self, scheme, depth, lr, n=MIN_SEEDS):
        """The cell's losses when ≥ n seeds ended and every one learned, else None."""
        _, ls = self.cell(scheme, depth, lr)
        return ls if len(ls) >= n and all(v is not None for v in ls.values()) else None

    def best(self, scheme, depth, n=MIN_SEEDS):
        """The rate whose ≥ n seeds all learned with the lowest mean loss: (lr, {seed: loss}) or None."""
        cands = [(statistics.mean(ls.values()), lr, ls) for lr in self.rates
                 if (ls := self.full(scheme, depth, lr, n)) is not None]
        if not cands:
            return None
        m, lr, ls = min(cands, key=lambda c: c[0])
        return lr, ls

    def best_per_seed(self, scheme, depth):
        """{seed: the rate of its lowest loss among the rates that seed ran and learned at}."""
        out = {}
        for lr in self.rates:
            for k, r in self.seeds(scheme, depth, lr).items():
                l = self.loss(r)
                if l is not None and (k not in out or l < out[k][1]):
                    out[k] = (lr, l)
        return {k: v[0] for k, v in sorted(out.items())}

    # --- differences -----------------------------------------------------------------------------
    @staticmethod
    def paired(a, b):
        """a − b paired by seed: (mean, lo, hi, n) over the seeds both have, or None."""
        d = [a[k] - b[k] for k in a if k in b and a[k] is not None and b[k] is not None]
        if not d:
            return None
        return statistics.mean(d), min(d), max(d), len(d)

    @staticmethod
    def resolved(p):
        return p is not None and p[3] >= MIN_SEEDS and (p[1] > 0 or p[2] < 0)

    # --- learning-rate sensitivity (Wortsman et al. 2023, §3.2) -----------------------------------
    def sensitivity(self, scheme, depth, seed, min_lr=0.0):
        """mean over the grid's rates ≥ min_lr of min(ℓ(η), ℓ₀) − ℓ*, for one seed that ran all of
        them (ℓ₀ = log₂ V, a failed run counted as ℓ₀); None if it lacks one."""
        l0 = self.j["init_loss_bits"]
        vals = []
        for lr in self.rates:
            if lr < min_lr:
                continue
            r = self.seeds(scheme, depth, lr).get(seed)
            if r is None:
                return None
            l = self.loss(r)
            if l is None:  # did not learn: its final loss if it finished, else ℓ₀
                b = r["reading"].get("final_bpb")
                l = b if b is not None and r["outcome"] not in ("diverged", "diverges") else l0
            vals.append(min(l, l0))
        star = min(vals)
        return statistics.mean(v - star for v in vals)


def fmt_rate(x):
    return f"{x:.0e}".replace("e-0", "e-")


def fmt_interval(p, digits=3):
    """'+0.012 [−0.004, +0.030] n=3' (a paired difference), or '–'."""
    if p is None:
        return "–"
    m, lo, hi, n = p
    return f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}] n={n}"


# --- the outcome rules (docs/reference.md#run-outcomes), recomputed to check the report's labels ----
SPIKE_BITS = 1.0 / 0.6931471805599453  # 1 nat in bits
IMPROVING_BITS = 0.02


def spiked(curve):
    lo = None
    for _, b in curve:
        if b is None or (lo is not None and b >= lo + SPIKE_BITS):
            return True
        lo = b if lo is None else min(lo, b)
    return False


def improving(curve):
    """The last quarter's mean ≥ 0.02 bit below the quarter before (needs ≥ 8 lines); None: unknown."""
    v = [b for _, b in curve]
    if len(v) < 8 or any(b is None for b in v):
        return None
    q = -(-len(v) // 4)
    return statistics.mean(v[-q:]) <= statistics.mean(v[-2 * q:-q]) - IMPROVING_BITS


def curve_label(a, r):
    """The label of an ended run from its curve (None without one)."""
    rd = r["reading"]
    curve = rd.get("train_curve") or []
    if not curve:
        return None
    guard = r.get("guard_stop", r["outcome"] == "diverged")  # the guard stopped it (old entries: "diverged")
    b = rd.get("final_bpb")
    below = b is not None and b < a.cut
    if guard:
        return "diverges"
    if spiked(curve):
        return "spiked and recovered" if below else "diverges"
    if below:
        return "trains"
    return "too slow" if improving(curve) else "stalls"


def reach_label(a, r):
    """The fallback for a run above the cut without a curve: the gradient reach at the first line."""
    g = r["reading"].get("grad_reach")
    return "stalls" if g is None or g < 0.01 else "too slow"
