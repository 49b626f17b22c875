"""SBERT-WK (Wang & Kuo 2020), batched: every token of every sentence of a batch at once.

Specification: docs/pooling.md (from the method's paper and its authors' reference code, quirks included).

Instead of one QR per (token, layer) window, this computes each token's Gram matrix over its layers once,
``G = X X^T`` (n x n), and reads every window's ``R`` from the Cholesky factor of the window's sub-Gram
(``R^T R = W W^T`` for the window matrix ``W``; ``R`` of ``qr(W^T)`` equals it up to the signs of its rows, and
every quantity used is invariant to those signs). Windows are grouped by size, so the work is a few batched
Cholesky factorisations of tiny matrices plus one batched matmul, with no Python loop over tokens or layers.
The small matrices are float64: adjacent layers are nearly collinear and their Gram would lose precision.
"""

from __future__ import annotations

from functools import lru_cache

import torch

_EPS = 1e-12


@lru_cache(maxsize=64)
def windows(n: int, m: int, clip_left: bool = False) -> tuple[tuple[int, ...], ...]:
    """Rows of the window of each layer ``k`` in ``0..n-1``: left neighbours, right neighbours, then ``k``.

    With ``clip_left=False`` (the reference's behaviour) a window whose left edge would fall below 0 gets no
    left neighbours at all; ``clip_left=True`` keeps the ones that exist.
    """
    out = []
    for k in range(n):
        if k - m >= 0 or clip_left:
            left = list(range(max(0, k - m), k))
        else:
            left = []
        right = list(range(k + 1, min(n, k + m + 1)))
        out.append(tuple(left + right + [k]))
    return tuple(out)


def layer_weights(gram: torch.Tensor, m: int, clip_left: bool = False) -> torch.Tensor:
    """Per-token layer weights ``a`` (novelty + alignment, each normalised, summed, normalised).

    ``gram``: float64 ``(N, n, n)``, the Gram matrix of each token's layer states. Returns float64 ``(N, n)``,
    rows summing to 1. A row whose weights are not finite (degenerate windows) falls back to uniform.
    """
    n_tok, n = gram.shape[0], gram.shape[-1]
    if n == 1:
        return torch.ones(n_tok, 1, dtype=gram.dtype, device=gram.device)
    nov = torch.empty(n_tok, n, dtype=gram.dtype, device=gram.device)
    align = torch.empty(n_tok, n, dtype=gram.dtype, device=gram.device)
    groups: dict[int, list[int]] = {}
    wins = windows(n, m, clip_left)
    for k, w in enumerate(wins):
        groups.setdefault(len(w), []).append(k)
    for s, ks in groups.items():
        idx = torch.tensor([wins[k] for k in ks], device=gram.device)  # (K, s)
        sub = gram[:, idx[:, :, None], idx[:, None, :]]  # (N, K, s, s)
        r_mat = _chol_r(sub)  # (N, K, s, s) upper triangular, R^T R = sub
        r = r_mat[..., :, -1]  # (N, K, s)
        r_norm = sub[..., -1, -1].clamp_min(0).sqrt()  # ||r|| = ||x_k||
        nov[:, ks] = r[..., -1].abs() / r_norm.clamp_min(_EPS)
        if s == 1:
            # No neighbours (window >= n with the reference's left edge): the reference divides 0 by 0 here;
            # we give the layer no alignment weight and keep its novelty.
            align[:, ks] = 0.0
            continue
        col_norm = torch.diagonal(sub, dim1=-2, dim2=-1)[..., :-1].clamp_min(0).sqrt()  # (N, K, s-1)
        c = (r_mat[..., :-1, :-1] / col_norm[..., None, :].clamp_min(_EPS)).mean(dim=-1)  # (N, K, s-1)
        r_head = r[..., :-1]
        cos = (c * r_head).sum(-1) / r_head.norm(dim=-1).clamp_min(_EPS)
        align[:, ks] = 1.0 / (cos * s * 2)
    a = _sum_normalise(nov) + _sum_normalise(align)
    a = _sum_normalise(a)
    bad = ~torch.isfinite(a).all(dim=-1)
    a[bad] = 1.0 / n
    return a


def _cholesky(sub: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Lower-triangular ``L`` with ``L L^T = sub`` for a batch of tiny SPD matrices, and where it failed (a pivot
    not positive, as LAPACK's ``potrf`` fails): float64 ``(..., s, s)`` and bool ``(...)``.

    Column by column over the whole batch (``s`` is a window, 2 to 2m+1 layers): ``torch.linalg.cholesky_ex``
    calls LAPACK once per 2x2 or 3x3 matrix, tens of thousands of calls a batch of passages, and was most of
    SBERT-WK's pooling time.
    """
    size = sub.shape[-1]
    low = torch.zeros_like(sub)
    failed = torch.zeros(sub.shape[:-2], dtype=torch.bool, device=sub.device)
    for j in range(size):
        row = low[..., j, :j]
        pivot = sub[..., j, j] - (row * row).sum(-1)
        failed |= ~(pivot > 0)  # NaN too
        diag = pivot.clamp_min(0).sqrt()
        low[..., j, j] = diag
        if j + 1 < size:
            below = sub[..., j + 1 :, j] - (low[..., j + 1 :, :j] * row[..., None, :]).sum(-1)
            low[..., j + 1 :, j] = below / diag[..., None]
    return low, failed


def _chol_r(sub: torch.Tensor) -> torch.Tensor:
    """Upper-triangular ``R`` with ``R^T R = sub``; QR of a matrix with that Gram where Cholesky fails.

    Cholesky fails only for a rank-deficient window (a layer state repeated exactly); there the QR of the
    symmetric square root's factor gives an ``R`` with the same Gram, as the reference's QR would.
    """
    low, failed = _cholesky(sub)
    r = low.transpose(-1, -2)
    if failed.any():
        evals, evecs = torch.linalg.eigh(sub[failed])
        root = evecs * evals.clamp_min(0).sqrt()[..., None, :]  # sub = root root^T
        r[failed] = torch.linalg.qr(root.transpose(-1, -2), mode="r")[1]
    return r


def _sum_normalise(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum(dim=-1, keepdim=True)


def token_importance(gram: torch.Tensor) -> torch.Tensor:
    """Population variance of the cosine between adjacent layers, per token: float64 ``(N,)``."""
    diag = torch.diagonal(gram, dim1=-2, dim2=-1).clamp_min(0).sqrt()  # (N, n)
    off = torch.diagonal(gram, offset=1, dim1=-2, dim2=-1)  # (N, n-1): <x_k, x_k+1>
    sims = off / (diag[:, :-1] * diag[:, 1:]).clamp_min(_EPS)
    if sims.shape[-1] == 0:
        return torch.zeros(gram.shape[0], dtype=gram.dtype, device=gram.device)
    return sims.var(dim=-1, unbiased=False)


def sbert_wk(
    hidden_states: torch.Tensor,
    mask: torch.Tensor,
    layer_start: int = -2,
    window: int = 1,
    clip_left: bool = False,
    word_vectors: str = "fused",
) -> torch.Tensor:
    """SBERT-WK sentence vectors: float32 ``(B, d)``, not normalised.

    ``word_vectors="last"`` is our variant, not the paper's: the token weights of SBERT-WK applied to the last
    layer's states instead of the fused word vectors (for models trained to pool their last layer).

    ``hidden_states`` float ``(L + 1, B, T, d)``; ``mask`` ``(B, T)``. Tokens used: ``[CLS]`` and the word pieces,
    not the last real token (``[SEP]``); layers ``layer_start .. L``. A negative ``layer_start`` counts from the
    top (``-3`` = the last three hidden states).
    """
    n_states = hidden_states.shape[0]
    start = layer_start + n_states if layer_start < 0 else layer_start
    if not 0 <= start < n_states:
        raise ValueError(f"layer_start {layer_start} is outside 0..{n_states - 1}")
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    x = hidden_states[start:].float()  # (n, B, T, d)
    n, batch, length, dim = x.shape
    lengths = mask.sum(dim=1)
    positions = torch.arange(length, device=mask.device).expand(batch, length)
    # Every sentence keeps at least its first token, so a [CLS]-only input still gets a vector.
    used = (positions < (lengths - 1).clamp_min(1)[:, None]) & (mask > 0)  # (B, T)
    # All positions at once, padding included (length-sorted batches keep it small): a gather of the used
    # tokens costs more than the wasted arithmetic. The Gram is summed in float32 and factorised in float64.
    gram = torch.einsum("kbtd,lbtd->btkl", x, x).double().reshape(batch * length, n, n)
    if word_vectors == "fused":
        a = layer_weights(gram, window, clip_left).reshape(batch, length, n)
    elif word_vectors == "last":
        a = torch.zeros(batch, length, n, dtype=gram.dtype, device=gram.device)
        a[..., -1] = 1.0
    else:
        raise ValueError(f"word_vectors must be 'fused' or 'last', got {word_vectors!r}")
    w = torch.where(used, token_importance(gram).reshape(batch, length), 0.0)
    totals = w.sum(dim=1, keepdim=True)
    counts = used.sum(dim=1, keepdim=True).clamp_min(1)
    # A sentence whose tokens all have zero variance: weight its tokens equally.
    w = torch.where(totals > _EPS, w / totals.clamp_min(_EPS), used / counts)
    coef = (a * w.unsqueeze(-1)).permute(2, 0, 1).float()  # (n, B, T): weight of x[k, b, t]
    out = torch.bmm(coef.reshape(n * batch, 1, length), x.reshape(n * batch, length, dim))
    return out.reshape(n, batch, dim).sum(dim=0)
