"""Cheapest wire bytes per payload byte for S1 at p99 <= 25 ms, 5 % iid and bursty.

Extends s1_5pct_bound.py (see README.md): Ricochet's own headers on every packet,
its ACK traffic, the bursty cell (Gilbert-Elliott, the simulator's and netem's
`s1_bursty`), the cost of finishing a message that missed its deadline, and
time-sharing between schemes (p99 needs only 99 % of messages on time, on average).

  python3 -m venv .venv && .venv/bin/pip install scipy && .venv/bin/python s1_bound.py
"""
import itertools
import numpy as np
from scipy.optimize import milp, linprog, LinearConstraint, Bounds

MSG = 400          # payload bytes per message (S1)
BUDGET = 0.01      # p99 <= 25 ms: at most 1 % of messages late
IP_UDP = 28        # IPv4 20 + UDP 8
# WIRE.md, "DATA (0x04)": the DATA header is 15 bytes (type, connection ID,
# 16-bit packet number, 8-byte tag). Frames (WIRE.md, "Frames"): the cheapest
# one carrying >= 128 bytes of a message is 7 bytes: MESSAGES = type 1 +
# channel 1 + first_seq 2 + count 1 + a 2-byte varint length; FRAGMENT is 8
# (type, channel, seq 2, index, count, 2-byte length); REPAIR is 6 (type,
# first_pn 2, count, 2-byte length) plus the parity image's own 6-byte
# header (u16 body_length, u32 check).
DATA_HDR = 15
MIN_FRAME = 7
RICOCHET_PKT = IP_UDP + DATA_HDR + MIN_FRAME          # 50 B: any packet that carries part of a message
# ACKs: the receiver (ServerConfig::default(), as bench/s1.mjs runs it)
# acknowledges at once each message packet that arrives more than
# max_ack_delay (5 ms) after the previous one (WIRE.md, Receiver obligations,
# rule 7): at 60 Hz, one ACK-only DATA packet per message at least, of 28 + 15 +
# a 7-byte ACK frame (one range, delay 128 us..16 ms; WIRE.md "Overhead").
ACK_FLOOR = IP_UDP + DATA_HDR + 7                     # 50 B per message
# Measured on the simulator (wasm/sim/examples/s1_sim.rs, low_latency, 3 seeds x
# 10,000 messages): ACK traffic is 1.09 packets and 88 B per message at 5 % iid,
# 1.16 packets and 93 B at bursty (ACK frames repeat up to 17 ranges, and lost
# packets make ranges).
ACK_MEASURED = {"iid 5 %": 88.0, "bursty": 93.0}


def iid(p):
    return {"name": "iid 5 %", "p_lost_first": p, "p_after_lost": p, "p_after_ok": p}


def gilbert(mean, corr):
    # LossModel::bursty(mean, corr) in wasm/sim/src/loss.rs: classic Gilbert,
    # Bad = this packet lost, p_bg = 1 - corr, p_gb = mean * p_bg / (1 - mean).
    # The chain steps per packet on the link (not per unit of time).
    p_bg = 1 - corr
    p_gb = mean * p_bg / (1 - mean)
    return {"name": "bursty", "p_lost_first": mean, "p_after_lost": 1 - p_bg, "p_after_ok": p_gb}


def pattern_probs(cell, n):
    """Loss patterns of a message's n consecutive packets on the link. The packet
    before them (the previous message's last) is in the chain's stationary state."""
    pats = list(itertools.product([0, 1], repeat=n))  # 1 = lost
    probs = []
    for pat in pats:
        pr, prev = 1.0, None
        for x in pat:
            q = cell["p_lost_first"] if prev is None else (cell["p_after_lost"] if prev else cell["p_after_ok"])
            pr *= q if x else 1 - q
            prev = x
        probs.append(pr)
    return pats, probs


def solve(cell, n, pkt, late_cost, budget=None, lam=0.0):
    """One message sent as n packets (sizes s_i, any code: an MDS code rebuilds
    it whenever the arrived s_i sum to 400). Minimises E[bytes]: sum s_i + pkt
    per packet, plus for a message not rebuilt by its deadline at least
    late_cost (one more packet's headers) + the bytes still missing, plus
    lam x P(late). With `budget`: subject to P(late) <= budget instead.
    Returns (objective's proven lower bound, bytes, P(late), sizes)."""
    pats, prob = pattern_probs(cell, n)
    m = len(pats)
    nv = n + 2 * m                                   # s_i, y_L (1 = rebuilt), miss_L (bytes still missing)
    c = np.r_[np.ones(n), -(late_cost + lam) * np.array(prob), np.array(prob)]
    A, lo, hi = [], [], []
    for j, pat in enumerate(pats):
        arrived = [0 if x else 1 for x in pat]
        row = np.zeros(nv); row[:n] = arrived; row[n + j] = -MSG      # sum arrived >= 400 y
        A.append(row); lo.append(0); hi.append(np.inf)
        row = np.zeros(nv); row[:n] = arrived; row[n + m + j] = 1      # miss >= 400 - sum arrived
        A.append(row); lo.append(MSG); hi.append(np.inf)
    if budget is not None:
        row = np.zeros(nv); row[n:n + m] = prob
        A.append(row); lo.append(1 - budget); hi.append(np.inf)
    if cell["p_after_lost"] == cell["p_after_ok"]:  # iid: order is free, break symmetry
        for i in range(n - 1):
            row = np.zeros(nv); row[i], row[i + 1] = 1, -1
            A.append(row); lo.append(0); hi.append(np.inf)
    r = milp(c, constraints=LinearConstraint(np.array(A), lo, hi),
             integrality=np.r_[np.zeros(n), np.ones(m), np.zeros(m)],
             bounds=Bounds(np.zeros(nv), np.r_[np.full(n, MSG), np.ones(m), np.full(m, MSG)]))
    if r.x is None:
        return None
    if r.status != 0:
        raise SystemExit(f"MILP not solved to optimality (n={n}): {r.message}")
    const = pkt * n + late_cost + lam               # the -(late+lam) y terms were shifted by this constant
    s = r.x[:n]
    fail = sum(p for p, y in zip(prob, r.x[n:n + m]) if y < .5)
    bytes_ = s.sum() + pkt * n + late_cost * fail + float(np.dot(prob, r.x[n + m:]))
    return r.fun + const, bytes_, fail, s


def best(cell, n, pkt, budget, late_cost):
    r = solve(cell, n, pkt, late_cost, budget=budget)
    return None if r is None else (r[1], r[2], r[3])


def lagrange(cell, nmax, pkt, late_cost):
    """Time-sharing between schemes (different messages sent differently) only
    needs the AVERAGE lateness <= 1 %. Weak duality: for every lam >= 0,
    min over schemes of (bytes + lam P(late)) - lam x 1 % is a lower bound on
    the cheapest such mix. Schemes of more than nmax packets cost at least
    (nmax+1) pkt + 400 (every byte of the message crosses once, in time or
    late), which enters the minimum. Maximised over lam (the bound is concave)."""
    floor_more = (nmax + 1) * pkt + MSG
    def lb(lam):
        vals = [solve(cell, n, pkt, late_cost, lam=lam)[0] for n in range(1, nmax + 1)]
        return min(vals) - lam * BUDGET
    grid = np.geomspace(1000, 1e5, 7)
    vals = [lb(l) for l in grid]
    i = int(np.argmax(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    best_v, best_l = vals[i], grid[i]
    for _ in range(6):                               # golden-section on the concave bound
        x1, x2 = b - (b - a) / 1.618, a + (b - a) / 1.618
        f1, f2 = lb(x1), lb(x2)
        for f, x in ((f1, x1), (f2, x2)):
            if f > best_v:
                best_v, best_l = f, x
        if f1 < f2:
            a = x1
        else:
            b = x2
    return best_v, best_l, floor_more


def hull(points, budget):
    """Time-sharing: the cheapest mix of schemes whose average lateness is <= budget."""
    cost = np.array([p[0] for p in points]); fail = np.array([p[1] for p in points])
    r = linprog(cost, A_ub=[fail], b_ub=[budget], A_eq=[np.ones(len(points))], b_eq=[1], bounds=(0, 1))
    mix = [(points[i][2], w) for i, w in enumerate(r.x) if w > 1e-6]
    return r.fun, mix


def as_built(cell, ack):
    """Ricochet's packet format as it is: a message travels whole in one DATA
    packet (28 + 15 + 7 + 400 = 450 B); a repair in time for it is an XOR
    over that packet alone (a copy): 28 + 15 + REPAIR 6 + image header 6 +
    the protected body (7 + 400) = 462 B. A fraction of messages get 0, 1 or 2
    repairs (2 = the same repair twice)."""
    data, rep = IP_UDP + DATA_HDR + MIN_FRAME + MSG, IP_UDP + DATA_HDR + 6 + 6 + MIN_FRAME + MSG
    pts = []
    for r in range(3):
        pats, prob = pattern_probs(cell, 1 + r)
        late = sum(p for pat, p in zip(pats, prob) if all(pat))  # every copy lost
        pts.append((data + r * rep + late * data, late, f"{r} repair"))
    c, mix = hull(pts, BUDGET)
    return c + ack, mix


def as_built_halves(cell, ack):
    """Ricochet's format for a latency-targeted message since GF(4) repairs:
    two halves, each a FRAGMENT in a packet of its own (28 + 15 + 8 + 200 =
    251 B), and r = 1..3 repairs of powers 0..r-1 (28 + 15 + REPAIR 6 + image
    header 6 + the protected body 8 + 200 = 263 B), any two of the 2 + r
    packets rebuilding the message; a late one still costs a resent half."""
    half = IP_UDP + DATA_HDR + 8 + MSG // 2
    rep = IP_UDP + DATA_HDR + 6 + 6 + 8 + MSG // 2
    pts = []
    for r in range(1, 4):
        pats, prob = pattern_probs(cell, 2 + r)
        late = sum(p for pat, p in zip(pats, prob) if len(pat) - sum(pat) < 2)
        pts.append((2 * half + r * rep + late * half, late, f"halves + {r} repair{'s' if r > 1 else ''}"))
    c, mix = hull(pts, BUDGET)
    return c + ack, mix


def cell_table(cell, nmax):
    print(f"\n== {cell['name']} (first packet lost {cell['p_lost_first']:.3f}, "
          f"P(lost | previous lost) {cell['p_after_lost']:.3f}, P(lost | previous arrived) {cell['p_after_ok']:.4f})")
    ack_m = ACK_MEASURED[cell["name"]]
    out = {}
    for key, pkt, late in (("ipudp", IP_UDP, 0.0), ("ricochet", RICOCHET_PKT, RICOCHET_PKT)):
        pts = []
        print(f"-- per packet {pkt} B; a late message costs >= {late:.0f} B + its missing bytes; "
              f"p99: P(late) <= 1 % per message")
        for n in range(1, nmax + 1):
            b = best(cell, n, pkt, BUDGET, late)
            if b is None:
                print(f"   n={n}: no scheme reaches 99 %")
            else:
                cost, fail, s = b
                pts.append((cost, fail, f"n={n}@{fail * 100:.2f}%"))
                print(f"   n={n}: {cost:6.1f} B ({cost / MSG:.3f} B/B) late {fail * 100:.3f} %  sizes {np.round(s).astype(int).tolist()}")
            if n <= 6:
                for bud in (0.005, 0.015, 0.02, 0.03, 0.05):
                    b2 = best(cell, n, pkt, bud, late)
                    if b2:
                        pts.append((b2[0], b2[1], f"n={n}@{b2[1] * 100:.2f}%"))
        c, mix = hull(pts, BUDGET)
        mixs = ", ".join(f"{w * 100:.0f} % {name}" for name, w in mix)
        print(f"   time-sharing, cheapest mix found: {c:6.1f} B ({c / MSG:.3f} B/B)  [{mixs}]")
        out["mix_" + key] = c
        if key == "ricochet":
            lb, lam, floor_more = lagrange(cell, nmax, pkt, late)
            scope = ("every n" if floor_more >= lb
                     else f"schemes of <= {nmax} packets (more cost >= {floor_more} B, below this bound)")
            print(f"   time-sharing, proven lower bound: {lb:6.1f} B ({lb / MSG:.3f} B/B), over {scope} (lambda {lam:.0f})")
            out["lb"], out["scope"] = lb, scope
    out["ack_m"] = ack_m
    out["built_floor"], mix_floor = as_built(cell, ACK_FLOOR)
    out["built_measured"], _ = as_built(cell, ack_m)
    out["built_mix"] = ", ".join(f"{w * 100:.0f} % {name}" for name, w in mix_floor)
    out["halves_floor"], mix_halves = as_built_halves(cell, ACK_FLOOR)
    out["halves_measured"], _ = as_built_halves(cell, ack_m)
    out["halves_mix"] = ", ".join(f"{w * 100:.0f} % {name}" for name, w in mix_halves)
    return out


def main():
    cells = [(iid(0.05), 8), (gilbert(0.10, 0.25), 7)]
    res = [(c["name"], cell_table(c, nmax)) for c, nmax in cells]
    f = lambda x: f"{x:.0f} B ({x / MSG:.2f})"
    print("\n| at p99 <= 25 ms: wire B per 400-B message (wire B / payload B) | " +
          " | ".join(name for name, _ in res) + " |")
    print("|---|" + "---|" * len(res))
    rows = [
        ("forward, IP/UDP headers only (28 B per packet), cheapest mix found", lambda r: f(r["mix_ipudp"])),
        ("forward, Ricochet headers (28 + 15 + 7 B per packet), cheapest mix found", lambda r: f(r["mix_ricochet"])),
        ("  proven lower bound (Lagrangian)", lambda r: f(r["lb"])),
        ("  + ACKs at the receiver's floor (one 50-B ACK per message)", lambda r: f(r["lb"] + ACK_FLOOR)),
        ("  + ACKs as measured on the simulator", lambda r: f(r["lb"] + r["ack_m"])),
        ("Ricochet's format as built (message whole, repair = copy), ACK floor", lambda r: f(r["built_floor"])),
        ("  the same, ACKs as measured", lambda r: f(r["built_measured"])),
        ("Ricochet's format now (halves + repairs of powers 0-2 of GF(4)), ACK floor", lambda r: f(r["halves_floor"])),
        ("  the same, ACKs as measured", lambda r: f(r["halves_measured"])),
    ]
    for label, g in rows:
        print(f"| {label} | " + " | ".join(g(r) for _, r in res) + " |")
    for name, r in res:
        print(f"{name}: lower bound over {r['scope']}; as built: {r['built_mix']}; now: {r['halves_mix']}")


if __name__ == "__main__":
    main()
