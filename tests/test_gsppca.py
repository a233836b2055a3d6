"""Globally sparse probabilistic PCA (Mattei, Bouveyron & Latouche 2016): the exact evidence against numerical
integration and high-precision arithmetic, the VEM against its loop-by-loop twin, selection, bad input."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from naive import gsppca_vem_naive, kv_ratio_up
from scipy import integrate, stats
from sklearn.base import clone

from repro import GSPPCA, evidence_path, gsppca_vem, log_evidence, theorem1_density
from repro.gsppca import _kernels as bessel
from repro.gsppca import log_bessel_k, log_density, vem_init, vem_iterations
from repro.gsppca.bessel import _kv_ratio
from repro.metrics import fscore_selection


def model_data(n, p, d, q, sigma, seed):
    """Model (3): x = V W y + eps, W standard Gaussian, q active variables at random."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((p, d))
    v = np.zeros(p, dtype=bool)
    v[rng.choice(p, q, replace=False)] = True
    X = rng.standard_normal((n, d)) @ (W * v[:, None]).T + sigma * rng.standard_normal((n, p))
    return X, v


def scale_mixture_density(r, q, d, alpha):
    """Density of x_v in R^q at ||x_v|| = r: N(0, alpha s I_q) integrated against the chi2_d density of s."""

    def f(s):
        return (
            (2 * math.pi * alpha * s) ** (-q / 2) * math.exp(-r * r / (2 * alpha * s)) * stats.chi2.pdf(s, d)
        )

    return integrate.quad(f, 0, np.inf, limit=500, epsabs=0.0, epsrel=1e-11)[0]


# --------------------------------------------------------------------------- Bessel K in log space
@pytest.mark.parametrize(
    ("nu", "z"),
    [
        (0.0, 1e-3),
        (0.5, 3.0),
        (3.0, 700.0),
        (10.0, 1e-6),
        (49.5, 1e-7),
        (49.5, 0.01),
        (50.0, 50.0),
        (75.5, 7000.0),
        (120.0, 3.0),
        (1950.0, 632.0),
        (2000.0, 1e-3),
        (300.5, 250.0),
    ],
)
def test_log_bessel_k_matches_mpmath(nu, z):
    mpmath.mp.dps = 50
    ref = float(mpmath.log(mpmath.besselk(nu, z)))
    assert abs(float(log_bessel_k(nu, z)) - ref) <= 1e-10 * max(1.0, abs(ref))


def test_kv_ratio_matches_mpmath():
    """K_(nu+1)/K_nu: by the upward recurrence at integer and half-integer orders below 50 (exact to a few
    roundings), through log_bessel_k at other orders (its accuracy), against mpmath; broadcast shapes."""
    mpmath.mp.dps = 40
    zs = np.geomspace(1e-6, 3e3, 19)
    kv = {}  # K_nu(z) at 40 digits, each once: the ratio at nu and at nu + 1 share K_(nu+1)

    def besselk(nu, z):
        if (nu, z) not in kv:
            kv[nu, z] = mpmath.besselk(nu, z)
        return kv[nu, z]

    for nu in [*np.arange(0.0, 50.0, 0.5), 50.0, 63.5, 0.3, 7.25]:
        got = _kv_ratio(nu, zs)
        ref = np.array([float(besselk(nu + 1, z) / besselk(nu, z)) for z in zs])
        rtol = 4e-15 if nu < 50 and (2 * nu) % 1 == 0 else 1e-9
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=0)
    nu = np.array([0.0, 0.5, 3.0, 17.5])
    z = np.array([[0.1], [2.0], [40.0]])
    assert _kv_ratio(nu, z).shape == (3, 4)
    # a negative order is not recurred from (K_-nu = K_nu: K_(1/2) / K_(-1/2) = 1)
    assert _kv_ratio(-0.5, 3.0) == pytest.approx(1.0, rel=1e-12)


def test_ranking_choice_ties_go_to_the_later_iteration():
    """Rankings whose best evidences differ only by round-off tie (the later iteration wins); a real
    difference wins wherever it is."""
    from types import SimpleNamespace

    p = 4
    orders = [np.roll(np.arange(p), k) for k in range(3)]  # three distinct rankings
    u = [np.linspace(1.0, 0.1, p)[np.argsort(o)] for o in orders]  # rank_variables(u) == order

    def choose(values):
        by_order = {o.tobytes(): v for o, v in zip(orders, values, strict=True)}
        est = GSPPCA(1)
        res = SimpleNamespace(n_iter=9, u=u[2], u_ratio=np.zeros(p))
        checkpoints = [(1, u[0], np.zeros(p)), (2, u[1], np.zeros(p))]
        est._choose_ranking(
            res, checkpoints, lambda o: SimpleNamespace(log_evidence=np.array([by_order[o.tobytes()]]))
        )
        return est.ranking_iter_

    v = -111.10212544527133
    assert choose([v, v * (1 - 1e-15), v]) == 9  # round-off: the VEM's end
    assert choose([v * (1 - 1e-15), v, v]) == 9
    assert choose([v * (1 - 1e-9), v, v]) == 1  # a real improvement at iteration 1
    assert choose([v, v * (1 - 1e-9), v * (1 + 1e-9)]) == 2


def test_kv_ratio_kernel_matches_twin():
    rng = np.random.default_rng(3)
    z = np.exp(rng.uniform(-10, 8, 200))
    nu0 = np.where(rng.random(200) < 0.5, 0.0, 0.5)
    steps = rng.integers(0, 60, 200)
    r0 = 1.0 + 1.0 / z
    out1, out2 = np.empty(200), np.empty(200)
    bessel.kv_ratio_up(z, r0, nu0, steps, out1)
    kv_ratio_up(z, r0, nu0, steps, out2)
    assert np.array_equal(out1, out2)


# --------------------------------------------------------------------------- Theorem 2
@pytest.mark.parametrize(
    ("q", "d", "alpha", "r"),
    [(1, 1, 1.0, 0.7), (3, 2, 0.5, 1.3), (5, 8, 2.0, 4.0), (10, 3, 1.0, 3.0), (4, 4, 0.3, 0.2)],
)
def test_theorem2_equals_numerical_integration(q, d, alpha, r):
    x = np.zeros((1, q))
    x[0, -1] = r
    got = float(np.exp(log_density(x, np.ones(q, bool), n_components=d, alpha=alpha, sigma1=1.0))[0])
    assert got == pytest.approx(scale_mixture_density(r, q, d, alpha), rel=1e-8)


def test_theorem2_inactive_part_is_gaussian():
    # The exponential carries the inactive variables x_vbar (the printed formula reads x_v).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 5))
    v = np.array([True, True, False, True, False])
    ld = log_density(x, v, n_components=2, alpha=0.7, sigma1=0.4)
    active = np.log(scale_mixture_density(np.linalg.norm(x[0, v]), 3, 2, 0.7))
    inactive = stats.norm(0, 0.4).logpdf(x[0, ~v]).sum()
    assert ld[0] == pytest.approx(active + inactive, rel=1e-9)


@pytest.mark.parametrize(("q", "d"), [(1, 1), (1, 4), (2, 1), (2, 3)])
def test_theorem2_integrates_to_one(q, d):
    alpha = 0.8

    def radial(r):  # surface of the sphere of radius r in R^q times the density
        x = np.zeros((1, q))
        x[0, 0] = r
        dens = float(np.exp(log_density(x, np.ones(q, bool), n_components=d, alpha=alpha, sigma1=1.0))[0])
        return dens * (2.0 if q == 1 else 2 * math.pi * r)

    total = integrate.quad(radial, 0, 1, limit=200)[0] + integrate.quad(radial, 1, np.inf, limit=200)[0]
    assert total == pytest.approx(1.0, abs=1e-7)


def test_log_evidence_equals_high_precision_evaluation():
    X, v = model_data(25, 300, 20, 250, 0.3, 1)
    Xc = X - X.mean(axis=0)
    ev, alpha, sigma1 = log_evidence(X, v, n_components=20, return_params=True)
    mpmath.mp.dps = 40
    q, p, d = 250, 300, 20
    ref = mpmath.mpf(0)
    ev_rows = log_density(Xc, v, n_components=20, alpha=alpha, sigma1=sigma1)
    assert ev == pytest.approx(float(ev_rows.sum()), rel=1e-12)
    for row in Xc[:8]:
        r2, o2 = mpmath.mpf(float(row[v] @ row[v])), mpmath.mpf(float(row[~v] @ row[~v]))
        r = mpmath.sqrt(r2)
        a, s = mpmath.mpf(alpha), mpmath.mpf(sigma1)
        dens = (
            a ** (-(q + d) / mpmath.mpf(4))
            * (2 * mpmath.pi) ** (-p / mpmath.mpf(2))
            * 2 ** (1 - d / mpmath.mpf(2))
            / mpmath.gamma(d / mpmath.mpf(2))
            / s ** (p - q)
            * mpmath.exp(-o2 / (2 * s * s))
            * r ** ((d - q) / mpmath.mpf(2))
            * mpmath.besselk((q - d) / mpmath.mpf(2), r / mpmath.sqrt(a))
        )
        ref += mpmath.log(dens)
    assert float(ev_rows[:8].sum()) == pytest.approx(float(ref), rel=1e-11)


def test_log_evidence_finite_at_large_sizes():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 5000))
    ev = log_evidence(X, np.arange(4000), n_components=100)
    assert np.isfinite(ev)
    for scale in (1e-100, 1e100):  # no overflow of alpha^(-(q+d)/4), r^((d-q)/2), K_nu
        assert np.isfinite(log_evidence(X * scale, np.arange(4000), n_components=100))


def test_alpha_maximizes_the_evidence():
    X, v = model_data(40, 60, 5, 15, 0.2, 2)
    ev, alpha, _ = log_evidence(X, v, n_components=5, return_params=True)
    for f in (0.98, 1.02, 0.5, 2.0):
        assert log_evidence(X, v, n_components=5, alpha=alpha * f) < ev


def test_evidence_path_equals_each_model():
    X, _ = model_data(30, 40, 4, 10, 0.3, 3)
    order = np.random.default_rng(0).permutation(40)
    path = evidence_path(X, order, n_components=4)
    for q in (1, 3, 4, 5, 10, 39, 40):
        ev, alpha, _ = log_evidence(X, order[:q], n_components=4, return_params=True)
        assert path.log_evidence[q - 1] == pytest.approx(ev, rel=1e-10)
        assert path.alpha[q - 1] == pytest.approx(alpha, rel=1e-6)


# --------------------------------------------------------------------------- Theorem 1
def test_theorem1_matches_monte_carlo():
    rng = np.random.default_rng(0)
    d, alpha, sigma = 3, 0.6, 0.5
    x = np.array([0.4, -0.9, 0.3, 1.1])
    v = np.array([True, True, True, False])
    got = theorem1_density(x, v, n_components=d, alpha=alpha, sigma=sigma)
    # Monte Carlo over y: given y, x_v ~ N(0, (alpha ||y||^2 + sigma^2) I_3); x_vbar ~ N(0, sigma^2).
    s = (rng.standard_normal((400_000, d)) ** 2).sum(axis=1)
    var = alpha * s + sigma**2
    mc = np.mean((2 * np.pi * var) ** -1.5 * np.exp(-(x[v] @ x[v]) / (2 * var)))
    mc *= stats.norm(0, sigma).pdf(x[3])
    assert got == pytest.approx(mc, rel=5e-3)


def test_theorem1_tends_to_theorem2():
    x = np.array([[0.8, -0.5]])
    t2 = float(np.exp(log_density(x, np.ones(2, bool), n_components=3, alpha=1.0, sigma1=1.0))[0])
    t1 = theorem1_density(x[0], np.ones(2, bool), n_components=3, alpha=1.0, sigma=1e-3)
    assert t1 == pytest.approx(t2, rel=1e-4)


# --------------------------------------------------------------------------- VEM
def test_vem_equals_loop_twin_and_free_energy_decreases():
    X, _ = model_data(12, 7, 2, 4, 0.3, 4)
    Xc = X - X.mean(axis=0)
    M0, s2 = vem_init(Xc, 2, np.random.default_rng(0))
    alpha = float(np.mean(M0 * M0))
    u, _, M, _, _, a, s, F, _ = vem_iterations(Xc, M0.copy(), np.ones(7), alpha, s2, 6, 0.0)
    u2, M2, a2, s22, F2 = gsppca_vem_naive(Xc, M0.copy(), np.ones(7), alpha, s2, 6)
    np.testing.assert_allclose(u, u2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(M, M2, rtol=1e-8, atol=1e-12)
    assert a == pytest.approx(a2, rel=1e-9) and s == pytest.approx(s22, rel=1e-9)
    np.testing.assert_allclose(F, F2, rtol=1e-10)


def test_vem_with_fixed_noise_equals_twin():
    # The diagnostic of bench_gsppca (issue 36): the noise held at a given value, every other block as usual.
    X, _ = model_data(12, 7, 2, 4, 0.3, 4)
    Xc = X - X.mean(axis=0)
    M0, s2 = vem_init(Xc, 2, np.random.default_rng(0))
    alpha = float(np.mean(M0 * M0))
    u, _, M, _, _, _, s, F, _ = vem_iterations(
        Xc, M0.copy(), np.ones(7), alpha, 2.5 * s2, 8, 0.0, fix_s2=True
    )
    u2, M2, _, s22, F2 = gsppca_vem_naive(Xc, M0.copy(), np.ones(7), alpha, 2.5 * s2, 8, fix_s2=True)
    assert s == s22 == 2.5 * s2
    np.testing.assert_allclose(u, u2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(M, M2, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(F, F2, rtol=1e-10)
    assert np.all(np.diff(F) <= 1e-10 * np.abs(F[1:]))
    free = vem_iterations(Xc, M0.copy(), np.ones(7), alpha, 2.5 * s2, 8, 0.0)
    assert abs(free[6] - s) > 1e-3 * s  # re-estimated, the noise moves: the flag is what holds it


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # tol=0 runs max_iter
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_free_energy_never_increases(seed):
    X, _ = model_data(40, 50, 5, 12, 0.5, seed)
    res = gsppca_vem(X, 5, max_iter=300, tol=0.0, random_state=seed)
    F = res.free_energy
    assert np.all(np.diff(F) <= 1e-10 * np.abs(F[1:]))
    assert np.all((res.u >= 0) & (res.u <= 1))


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_low_noise_recovers_true_support():
    # Issue 19: without the scale step the VEM hit its 1000-iteration cap at low noise in every replicate.
    for seed in range(3):
        X, v = model_data(50, 30, 5, 10, 0.05, seed)
        m = GSPPCA(5, random_state=0).fit(X)
        assert m.vem_.converged and m.n_iter_ < 1000
        assert fscore_selection(m.support_, v) == 1.0
        assert m.n_selected_ == 10 == int(np.argmax(m.evidence_path_)) + 1


def test_gsppca_attributes_and_forced_q():
    X, _ = model_data(60, 40, 3, 8, 0.1, 5)
    m = GSPPCA(3, n_selected=12, random_state=1).fit(X + 5.0)  # not centred: centred inside
    assert m.n_selected_ == 12 == m.support_.sum()
    C = m.components_
    np.testing.assert_allclose(C @ C.T, np.eye(3), atol=1e-10)
    assert np.all(C[:, ~m.support_] == 0)
    Xs = (X - X.mean(0))[:, m.support_]
    np.testing.assert_allclose(m.explained_variance_, np.linalg.eigvalsh(np.cov(Xs.T))[::-1][:3], rtol=1e-9)
    m2 = clone(m).fit(X)
    np.testing.assert_array_equal(m2.support_, m.support_)
    np.testing.assert_allclose(m2.u_, m.u_, rtol=1e-8, atol=1e-10)
    assert m.transform(X).shape == (60, 3)
    assert m.evidence_path_.shape == (40,) and m.alpha_path_.shape == (40,)


# --------------------------------------------------------------------------- bad input
def test_bad_input():
    X, v = model_data(20, 10, 2, 4, 0.3, 6)
    with pytest.raises(ValueError, match="n_components"):
        log_evidence(X, v, n_components=10)
    with pytest.raises(ValueError, match="n_components"):
        GSPPCA(10).fit(X)
    with pytest.raises(ValueError, match="support"):
        log_evidence(X, np.zeros(10, bool), n_components=2)
    with pytest.raises(ValueError, match="support"):
        log_evidence(X, [0, 11], n_components=2)
    with pytest.raises(ValueError, match="n_selected"):
        GSPPCA(2, n_selected=11).fit(X)
    with pytest.raises(ValueError, match="n_selected"):
        GSPPCA(2, n_selected="all").fit(X)
    rank1 = np.outer(np.arange(20.0), np.arange(1.0, 11.0))
    with pytest.raises(ValueError, match="sigma1"):
        log_evidence(rank1, [0, 1], n_components=2)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="X holds NaN"):
        GSPPCA(2).fit(bad)
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        log_evidence(bad, v, n_components=2)
    with pytest.raises(ValueError, match="alpha"):
        log_evidence(X, v, n_components=2, alpha=0.0)
    # Centring: shifted data give the same evidence.
    assert log_evidence(X + 3.0, v, n_components=2) == pytest.approx(log_evidence(X, v, n_components=2))


# --------------------------------------------------------------------------- issue 20: scale, defaults, score
@pytest.mark.parametrize("factor", [1e150, 1e-150])
def test_scale_equivariance(factor):
    X, _ = model_data(40, 20, 3, 6, 0.3, 1)
    m = GSPPCA(3, random_state=0).fit(X)
    mf = GSPPCA(3, random_state=0).fit(X * factor)
    np.testing.assert_array_equal(mf.support_, m.support_)
    np.testing.assert_allclose(mf.components_, m.components_, atol=1e-10)
    np.testing.assert_allclose(mf.explained_variance_ / factor**2, m.explained_variance_, rtol=1e-8)
    assert mf.sigma1_ / factor == pytest.approx(m.sigma1_, rel=1e-12)
    np.testing.assert_allclose(mf.alpha_path_ / factor**2, m.alpha_path_, rtol=1e-8)
    np.testing.assert_allclose(mf.evidence_path_ + 40 * 20 * math.log(factor), m.evidence_path_, rtol=1e-9)
    assert mf.score(X * factor) + 20 * math.log(factor) == pytest.approx(m.score(X), rel=1e-9)


def test_scale_extremes_give_the_answer_or_name_the_fix():
    X, v = model_data(40, 20, 3, 6, 0.3, 1)
    ev = log_evidence(X, v, n_components=3)
    # The evidence of X * c is that of X minus n p log c: finite at any scale (was LinAlgError at 1e300).
    for c in (1e300, 1e-300):
        assert log_evidence(X * c, v, n_components=3) == pytest.approx(ev - 800 * math.log(c), rel=1e-12)
    path = evidence_path(X * 1e-150, np.arange(20), n_components=3)
    assert path.sigma1 / 1e-150 == pytest.approx(evidence_path(X, np.arange(20), n_components=3).sigma1)
    for c in (1e300, 1e-300):  # alpha ~ 1e+-600 cannot be returned
        with pytest.raises(ValueError, match=r"X is too (large|small) .*prior variances alpha"):
            evidence_path(X * c, np.arange(20), n_components=3)
    r0 = gsppca_vem(X, 2, random_state=0)
    r = gsppca_vem(X * 1e-150, 2, random_state=0)
    np.testing.assert_allclose(r.u, r0.u, atol=1e-12)
    with pytest.raises(ValueError, match=r"X is too small for float64.*Multiply X"):
        gsppca_vem(X * 1e-300, 2, random_state=0)  # was ZeroDivisionError, then alpha = sigma2 = 0 (issue 35)
    with pytest.raises(ValueError, match="X is too large for float64"):
        gsppca_vem(X * 1e300, 2)  # sigma^2 ~ 1e600 cannot be returned
    with pytest.raises(ValueError, match=r"X is too large for float64.*Divide X"):
        GSPPCA(3).fit(X * 1e300)
    with pytest.raises(ValueError, match=r"X is too small for float64.*Multiply X"):
        GSPPCA(3).fit(X * 1e-300)
    for bad in (np.zeros((10, 5)), np.full((10, 5), 3.0)):
        with pytest.raises(ValueError, match="X has no variance"):
            GSPPCA(2).fit(bad)
        with pytest.raises(ValueError, match="X has no variance"):
            gsppca_vem(bad, 2)
        with pytest.raises(ValueError, match="sigma1 is zero"):
            log_evidence(bad, [0, 1], n_components=2)


def test_vem_stopping_rule_is_scale_free():
    X, _ = model_data(40, 20, 3, 6, 0.3, 1)
    r0 = gsppca_vem(X, 2, random_state=0)
    r = gsppca_vem(X * 3.0, 2, random_state=0)
    assert r.n_iter == r0.n_iter
    np.testing.assert_allclose(r.u, r0.u, atol=1e-12)
    np.testing.assert_allclose(r.free_energy - 800 * math.log(3.0), r0.free_energy, rtol=1e-10)


def test_default_construction_and_score():
    X, _ = model_data(40, 20, 3, 6, 0.3, 2)
    m = GSPPCA().fit(X)
    assert m.n_components == 1 and m.sigma1 == "bc" and m.components_.shape == (1, 20)
    m = GSPPCA(3, random_state=0).fit(X)
    q = m.n_selected_
    Xn, _ = model_data(7, 20, 3, 6, 0.3, 3)
    expected = log_density(
        Xn - m.mean_, m.support_, n_components=3, alpha=m.alpha_path_[q - 1], sigma1=m.sigma1_
    ).mean()
    assert m.score(Xn) == pytest.approx(expected, rel=1e-12)
    # On the training data the mean log-likelihood is the maximized evidence over n.
    assert m.score(X) == pytest.approx(m.evidence_path_[q - 1] / 40, rel=1e-9)


def test_noise_estimates():
    X, _ = model_data(30, 80, 4, 10, 0.5, 4)
    Xc = X - X.mean(axis=0)
    _, ml = log_evidence(X, np.arange(10), n_components=4, sigma1="ml", return_params=True)[1:]
    _, bc = log_evidence(X, np.arange(10), n_components=4, sigma1="bc", return_params=True)[1:]
    lam = np.linalg.eigvalsh(Xc.T @ Xc / 30)[::-1]
    assert ml**2 == pytest.approx(lam[4:].mean(), rel=1e-10)
    # Passemier, Li & Yao (2017), written out for the largest d eigenvalues (GSPPCA.R's sdPPCA, "BC").
    c, s = 80 / 30, ml**2
    a = [0.5 * (math.sqrt(max((s * (c + 1) - x) ** 2 - 4 * c * s * s, 0)) - s * (c + 1) + x) for x in lam[:4]]
    b = math.sqrt(c / 2) * (4 + s * sum(1 / aj for aj in a))
    assert bc**2 == pytest.approx(s + b * s * math.sqrt(2 * c) / 76, rel=1e-10)
    assert bc > ml
    assert GSPPCA(4, sigma1="ml", random_state=0).fit(X).sigma1_ == pytest.approx(ml)
    with pytest.raises(ValueError, match="'sigma1' parameter of GSPPCA must be a str among"):
        GSPPCA(4, sigma1="js").fit(X)


@pytest.mark.data("leukemia_golub/golub.RData")
def test_noise_estimates_equal_gsppca_r_on_golub():
    """The values GSPPCA.R's sdPPCA printed on Golub (recorded in /work/shared/peers/results/gsppca)."""
    from data_fetch import load_leukemia_golub

    X = load_leukemia_golub().X
    order = np.arange(X.shape[1])
    assert evidence_path(X, order, n_components=1).sigma1 == pytest.approx(0.5341218920137996, rel=1e-12)
    assert evidence_path(X, order, n_components=30).sigma1 == pytest.approx(0.19693339842604546, rel=1e-12)
    assert evidence_path(X, order, n_components=1, sigma1="ml").sigma1 == pytest.approx(0.5272144668186495)
