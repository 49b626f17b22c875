"""A plain per-token SBERT-WK written from the specification: float64, loops, one QR per window.

Slow on purpose and kept in the tests only, as the yardstick for the batched implementation.
"""

from __future__ import annotations

import torch


def reference_sbert_wk(
    hidden: torch.Tensor, layer_start: int, window: int, clip_left: bool = False
) -> torch.Tensor:
    """One sentence: ``hidden`` ``(L + 1, T, d)`` over its real tokens ([CLS] .. [SEP]); returns float64 ``(d,)``."""
    h = hidden.double()
    start = layer_start + h.shape[0] if layer_start < 0 else layer_start
    n_tokens = max(h.shape[1] - 1, 1)  # drop the final [SEP], keep at least [CLS]
    x = h[start:, :n_tokens, :]
    n = x.shape[0]
    words, importance = [], []
    for t in range(n_tokens):
        xs = x[:, t, :]
        nov = torch.zeros(n, dtype=torch.float64)
        align = torch.zeros(n, dtype=torch.float64)
        for k in range(n):
            if k - window >= 0 or clip_left:
                left = xs[max(0, k - window) : k]
            else:
                left = xs[0:0]
            right = xs[k + 1 : k + window + 1]
            w = torch.cat([left, right, xs[k : k + 1]])
            _, r_mat = torch.linalg.qr(w.T)
            r = r_mat[:, -1]
            nov[k] = r[-1].abs() / r.norm()
            s = w.shape[0]
            if s > 1:
                c_mat = r_mat[:-1, :-1] / r_mat[:-1, :-1].norm(dim=0)
                c = c_mat.mean(dim=1)
                cos = c @ r[:-1] / r[:-1].norm()
                align[k] = 1.0 / (cos * s * 2)
        if n == 1:
            a = torch.ones(1, dtype=torch.float64)
        else:
            a = nov / nov.sum() + align / align.sum()
            a = a / a.sum()
        words.append((a[:, None] * xs).sum(dim=0))
        if n > 1:
            sims = torch.stack(
                [torch.nn.functional.cosine_similarity(xs[k], xs[k + 1], dim=0) for k in range(n - 1)]
            )
            importance.append(sims.var(unbiased=False))
        else:
            importance.append(torch.tensor(0.0, dtype=torch.float64))
    imp = torch.stack(importance)
    weights = imp / imp.sum() if imp.sum() > 0 else torch.full_like(imp, 1.0 / len(imp))
    return (weights[:, None] * torch.stack(words)).sum(dim=0)
