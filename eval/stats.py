"""Pure statistics: the board-pair score interval, Wilson interval, mean interval, Bradley-Terry ratings and their
bootstrap."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% standard normal quantile
ELO_SCALE = 400.0  # Elo points per factor 10 in Bradley-Terry strength
BT_PRIOR_GAMES = 1.0  # virtual drawn games added to every pair that played, so ratings stay finite
BT_TOLERANCE = 1e-10  # convergence on log-strengths
BT_MAX_ITERATIONS = 10_000
BOOTSTRAP_RESAMPLES = 1000
CI_PERCENTILES = (2.5, 97.5)


def wilson_interval(p_hat: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p_hat`` observed over ``n`` trials.

    ``wilson_interval(0.5, 100) == (0.4038..., 0.5962...)``. For counts of independent yes/no
    events; not for the board-pair score, whose pairs mostly split (:func:`pair_score_interval`).
    """
    if n < 1:
        raise ValueError(f"the Wilson interval needs n >= 1, got {n}")
    if not 0.0 <= p_hat <= 1.0:
        raise ValueError(f"a proportion is in [0, 1], got {p_hat}")
    z2n = z * z / n
    center = (p_hat + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p_hat * (1 - p_hat) / n + z2n / (4 * n))
    return max(0.0, center - half), min(1.0, center + half)


def pair_score_interval(scores: Sequence[float], z: float = Z_95) -> tuple[float, float]:
    """95% interval of the mean board-pair score, from the scores themselves (a paired interval).

    A board pair scores 0, 0.5 or 1 (quarters in deal-level mode) and most pairs split, so the
    variance of a pair's score is far below a coin flip's (about a fifth of it at 80% splits):
    Wilson's interval with n = board pairs is about twice too wide. This is the normal interval
    mean ± z·s/√n with s the sample standard deviation of the scores, which one won and one lost
    pseudo-pair join: with few pairs, or all of them split, the interval stays honest instead of
    shrinking to a point (with thousands of pairs they change s by a thousandth). Clipped to
    [0, 1]; the centre is the plain mean.
    """
    x = np.asarray(scores, dtype=float)
    if x.size == 0:
        raise ValueError("the interval of no board-pair scores is undefined")
    mean = float(x.mean())
    spread = float(np.concatenate([x, (0.0, 1.0)]).std(ddof=1))
    half = z * spread / math.sqrt(x.size)
    return max(0.0, mean - half), min(1.0, mean + half)


def mean_interval(values: Sequence[float], z: float = Z_95) -> tuple[float, float, float]:
    """``(mean, low, high)``: mean ± z · sample standard deviation / sqrt(n) (normal approximation).

    With a single value the interval is undefined: ``(mean, nan, nan)``.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("the mean of no values is undefined")
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, math.nan
    half = z * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def bradley_terry(wins: np.ndarray, games: np.ndarray, prior_games: float = BT_PRIOR_GAMES) -> np.ndarray:
    """Bradley-Terry ratings on the Elo scale (mean 0), fitted by the MM algorithm (Hunter 2004).

    ``wins[..., i, j]`` is i's score against j (fractions allowed: a draw is half a win) and
    ``games[..., i, j]`` the number of games between them (symmetric); leading axes are
    independent problems (used by the bootstrap). ``prior_games`` virtual draws are added to
    every pair that played, so a bot that won everything still gets a finite rating. Under the
    model, i beats j with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``.
    """
    w = np.asarray(wins, dtype=float)
    n = np.asarray(games, dtype=float)
    if w.shape[-2:] != n.shape[-2:] or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"wins and games must be square matrices of the same size, got {w.shape} and {n.shape}")
    played = n > 0
    w = w + np.where(played, prior_games / 2, 0.0)
    n = n + np.where(played, prior_games, 0.0)
    total_wins = w.sum(axis=-1)
    if np.any(total_wins <= 0):
        raise ValueError("every player needs some score (or a prior) for Bradley-Terry ratings")
    log_p = np.zeros(w.shape[:-1])
    for _ in range(BT_MAX_ITERATIONS):
        p = np.exp(log_p)
        denominator = (n / (p[..., :, None] + p[..., None, :])).sum(axis=-1)
        new = np.log(total_wins / denominator)
        new -= new.mean(axis=-1, keepdims=True)
        converged = np.max(np.abs(new - log_p)) < BT_TOLERANCE
        log_p = new
        if converged:
            break
    return ELO_SCALE / math.log(10) * log_p


def bootstrap_bradley_terry(
    n_players: int,
    pair_scores: dict[tuple[int, int], Sequence[float]],
    rng: np.random.Generator,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(elo, low, high)``: ratings and 95% percentile-bootstrap intervals.

    ``pair_scores[(i, j)]`` holds one score in [0, 1] per game of i against j (a board pair's
    score). Each resample draws, for every pair independently, as many games with replacement
    from that pair's scores and refits :func:`bradley_terry`.
    """
    wins = np.zeros((n_players, n_players))
    games = np.zeros((n_players, n_players))
    boot_wins = np.zeros((resamples, n_players, n_players))
    for (i, j), scores in pair_scores.items():
        s = np.asarray(scores, dtype=float)
        wins[i, j], wins[j, i] = s.sum(), s.size - s.sum()
        games[i, j] = games[j, i] = s.size
        values, counts = np.unique(s, return_counts=True)  # resample counts of each distinct score
        sums = rng.multinomial(s.size, counts / s.size, size=resamples) @ values
        boot_wins[:, i, j], boot_wins[:, j, i] = sums, s.size - sums
    elo = bradley_terry(wins, games)
    boot = bradley_terry(boot_wins, np.broadcast_to(games, boot_wins.shape))
    low, high = np.percentile(boot, CI_PERCENTILES, axis=0)
    return elo, low, high
