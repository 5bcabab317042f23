import itertools, numpy as np
from scipy.optimize import milp, LinearConstraint, Bounds
P, MSG, HDR, BUDGET = 0.05, 400, 28, 0.01
def best(n):
    pats = list(itertools.product([0,1], repeat=n))  # 1 = packet lost
    prob = [P**sum(l)*(1-P)**(n-sum(l)) for l in pats]
    nv = n + len(pats)                              # s_1..s_n, then y_L (1 = message rebuilt)
    c = np.r_[np.ones(n), np.zeros(len(pats))]
    A, lo, hi = [], [], []
    for j, l in enumerate(pats):                    # sum of arrived s_i >= 400 * y_L
        row = np.zeros(nv); row[:n] = [0 if x else 1 for x in l]; row[n+j] = -MSG
        A.append(row); lo.append(0); hi.append(np.inf)
    row = np.zeros(nv); row[n:] = prob               # P(rebuilt) >= 1 - budget
    A.append(row); lo.append(1-BUDGET); hi.append(np.inf)
    for i in range(n-1):                            # symmetry: s_1 >= s_2 >= ...
        row = np.zeros(nv); row[i], row[i+1] = 1, -1; A.append(row); lo.append(0); hi.append(np.inf)
    r = milp(c, constraints=LinearConstraint(np.array(A), lo, hi),
             integrality=np.r_[np.zeros(n), np.ones(len(pats))],
             bounds=Bounds(np.zeros(nv), np.r_[np.full(n, MSG), np.ones(len(pats))]))
    if r.x is None: return None
    s = r.x[:n]; fail = sum(p for p, y in zip(prob, r.x[n:]) if y < .5)
    return s.sum(), s, fail
for n in range(1, 11):
    b = best(n)
    if b is None: print(f"n={n:2d} infeasible"); continue
    S, s, fail = b
    print(f"n={n:2d} payload {S:6.1f}  +headers {S+HDR*n:6.1f} B  ({(S+HDR*n)/MSG:.3f} B/B)  fail {fail*100:.3f}%  sizes {np.round(s).astype(int).tolist()}")
