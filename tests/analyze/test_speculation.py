"""The speculation model's fits: exact least squares, the same floats whichever BLAS kernels a
CPU picks, so a recommendation re-derived on another machine is the same bytes."""

import os
import shutil

import numpy as np
import pytest

from knee.analyze.recommend import speculation
from knee.core.errors import KneeError
from tests.helpers import ROOT, run_knee

PUBLISHED = ROOT / "results" / "ksched-cpu"


def test_a_fit_on_exact_data_returns_the_coefficients_exactly():
    truth = (0.0078125, 0.0009765625, 0.001953125, 0.0001220703125)  # powers of two
    obs = [(c, k, truth[0] + truth[1] * c + truth[2] * k + truth[3] * c * k)
           for c in (1, 2, 4, 8, 16) for k in (1, 3, 5)]
    fit = speculation.fit_step_model(obs)
    assert fit.coef == truth and fit.rms_rel_error == 0.0 and fit.max_rel_error == 0.0
    assert speculation.predict(fit.coef, speculation.design(32, 7)) == \
        truth[0] + truth[1] * 32 + truth[2] * 7 + truth[3] * 224


def test_least_squares_agrees_with_a_linear_algebra_library_on_noisy_data():
    rng = np.random.default_rng(7)
    rows = [[1.0, float(c), float(k), float(c * k)] for c in (1, 2, 4, 8, 16) for k in (1, 3, 5)]
    y = [0.01 + 0.001 * r[1] + 0.002 * r[2] + 0.0001 * r[3] + rng.normal(0, 1e-4) for r in rows]
    ours = speculation.least_squares(rows, y)
    theirs, *_ = np.linalg.lstsq(np.array(rows), np.array(y), rcond=None)
    assert ours == pytest.approx(list(theirs), rel=1e-9)
    # the residual is orthogonal to every column: the normal equations hold
    resid = [speculation.predict(ours, r) - v for r, v in zip(rows, y, strict=True)]
    for j in range(4):
        assert abs(sum(r[j] * e for r, e in zip(rows, resid, strict=True))) < 1e-15 * len(rows)


def test_terms_the_points_cannot_pin_down_are_an_error_not_a_guess():
    rows = [[1.0, float(c), 5.0, 5.0 * c] for c in (1, 2, 4, 8)]  # one k: k is the intercept
    assert speculation.rank(rows) == 2
    with pytest.raises(KneeError, match="4 terms but the points pin down only 2"):
        speculation.least_squares(rows, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("kernel", ["Prescott", "Haswell"])
def test_the_published_recommendation_is_the_same_bytes_under_any_blas_kernel(tmp_path, kernel):
    # OpenBLAS chooses its kernels by CPU (OPENBLAS_CORETYPE forces one): a fit through it
    # changed the recommendation's last digits from one machine to the next
    copy = tmp_path / "ksched-cpu"
    shutil.copytree(PUBLISHED, copy)
    (copy / "recommend" / "recommendation.json").unlink()
    r = run_knee("recommend", copy, env={**os.environ, "OPENBLAS_CORETYPE": kernel})
    assert r.returncode == 0, r.stderr
    assert (copy / "recommend" / "recommendation.json").read_bytes() == \
        (PUBLISHED / "recommend" / "recommendation.json").read_bytes()
