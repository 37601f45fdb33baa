"""Pictures of tensors with matplotlib (Agg, no pyplot state): PNG, or SVG/PDF by the path's extension.

* :func:`draw`: the contents of a 1-D to 3-D tensor as a grid (3-D: one panel per leading index); stored
  entries shaded (stored zeros -- padding or explicit -- lighter and hatched), values printed when the
  grid is small.
* :func:`draw_storage`: the level buffers (positions, coordinates per level, then values) as rows of
  cells; long buffers show their first and last cells around an ellipsis; zeros a padded format stores
  are hatched.
* :func:`draw_raw`: the nonzero pattern of a large 2-D or 3-D tensor as a density image (entries binned
  with ``np.bincount``, log colour scale; 3-D: the three projections), so millions of nonzeros cost one
  vectorized pass.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from frontend.storage._convert import coordinates, inside_shape, level_coordinates
from frontend.storage._layout import is_padded, to_host
from frontend.storage._protocol import StoredTensor

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_GRID = 64 * 64      # draw(): most cells per panel
MAX_VALUES = 24 * 24    # draw(): values printed up to this many cells per panel
ROW_CELLS = 32          # draw_storage(): longer buffers show the first/last ROW_CELLS // 2 cells
STORED, ZERO = "#4c72b0", "#c6d4ea"  # stored nonzero, stored zero; unstored cells are white


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure
    return Figure(figsize=(min(max(width, 2.0), 40.0), min(max(height, 1.5), 40.0)), dpi=100)


def _save(fig: Figure, path: Any) -> Path:
    p = Path(path)
    fig.savefig(p, bbox_inches="tight")
    return p


def _text(v: Any) -> str:
    if isinstance(v, (complex, np.complexfloating)):
        return f"{v.real:.2g}{v.imag:+.2g}j"
    if isinstance(v, (float, np.floating)):
        return f"{v:.3g}"
    return str(v)


def _contents(t: StoredTensor) -> tuple[np.ndarray, np.ndarray]:
    """Dense values and the mask of stored positions (padding inside the shape counts as stored)."""
    dense = t.to_dense()
    stored = np.zeros(t.shape, dtype=bool)
    if t.tensor_format.is_dense:
        stored[...] = True
        return dense, stored
    lvl, _ = level_coordinates(t)
    dims = [np.asarray(d) for d in t.tensor_format.lvl2dim(lvl)]
    keep = inside_shape(t.tensor_format, dims, t.shape)
    stored[tuple(d if keep is None else d[keep] for d in dims)] = True
    return dense, stored


def _grid(ax: Any, values: np.ndarray, stored: np.ndarray, title: str) -> None:
    from matplotlib.colors import to_rgb
    m, n = values.shape
    rgb = np.ones((max(m, 1), max(n, 1), 3))
    rgb[:m, :n][stored & (values == 0)] = to_rgb(ZERO)
    rgb[:m, :n][stored & (values != 0)] = to_rgb(STORED)
    ax.imshow(rgb, interpolation="nearest", aspect="equal")
    ax.set_xticks(np.arange(-0.5, n, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, m, 1), minor=True)
    ax.grid(which="minor", color="#888888", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(range(n) if n <= 32 else [])
    ax.set_yticks(range(m) if m <= 32 else [])
    ax.set_title(title, fontsize=9)
    zeros = np.argwhere(stored & (values == 0))
    for i, j in zeros[:MAX_GRID]:
        ax.add_patch(_hatch(j, i))
    if m * n <= MAX_VALUES:
        for i, j in np.argwhere(stored):
            v = values[i, j]
            ax.text(j, i, _text(v), ha="center", va="center", fontsize=7,
                    color="white" if v != 0 else "#333333")


def _hatch(x: float, y: float) -> Any:
    from matplotlib.patches import Rectangle
    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#7f8fa6", linewidth=0)


def draw(t: StoredTensor, path: Any, title: str | None = None) -> Path:
    """The tensor's contents as a grid of cells (1-D to 3-D), stored entries shaded."""
    if not 1 <= t.ndim <= 3:
        raise ValueError(f"draw() shows 1-D to 3-D tensors, this one has {t.ndim} dimensions")
    per_panel = int(np.prod(t.shape[-2:])) if t.ndim > 1 else t.shape[0]
    if per_panel > MAX_GRID:
        raise ValueError(f"{t.shape} is too large for a cell grid ({per_panel} cells per panel, at most "
                         f"{MAX_GRID}); use draw_raw() for the nonzero pattern")
    values, stored = _contents(t)
    if t.ndim == 1:
        values, stored = values[None, :], stored[None, :]
    panels = [(values, stored, "")] if values.ndim == 2 else \
        [(values[k], stored[k], f"[{k}, :, :]") for k in range(values.shape[0])]
    m, n = panels[0][0].shape if panels else (1, 1)
    fig = _figure(0.45 * max(n, 1) * max(len(panels), 1) + 1, 0.45 * max(m, 1) + 1.2)
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, (v, s, label) in zip(axes, panels):
        _grid(ax, v, s, label)
    if not panels:
        axes[0].set_axis_off()
    fig.suptitle(title or f"{t.tensor_format.name or 'tensor'} {t.shape}: {t.tensor_format}", fontsize=9)
    return _save(fig, path)


def _buffer_rows(t: StoredTensor) -> list[tuple[str, np.ndarray]]:
    rows = []
    for k in range(t.tensor_format.num_levels):
        for name, buf in (("pos", t.pos(k)), ("crd", t.crd(k))):
            if buf is not None:
                rows.append((f"{name}[{k}]", np.ravel(to_host(buf))))
    rows.append(("values", np.ravel(to_host(t.val))))
    return rows


def _cells(buf: np.ndarray) -> list[Any]:
    """Cell contents of a buffer row; ``None`` is the ellipsis of a long buffer."""
    if len(buf) <= ROW_CELLS:
        return list(buf)
    half = ROW_CELLS // 2
    return list(buf[:half]) + [None] + list(buf[-half:])


def draw_storage(t: StoredTensor, path: Any, title: str | None = None) -> Path:
    """The level buffers as rows of cells; zeros that a padded format stores are hatched."""
    from matplotlib.patches import Rectangle
    rows = _buffer_rows(t)
    padded = is_padded(t.tensor_format)
    width = max([len(_cells(b)) for _, b in rows] + [1])
    fig = _figure(0.55 * width + 2, 0.55 * len(rows) + 1)
    ax = fig.add_subplot(1, 1, 1)
    for r, (name, buf) in enumerate(rows):
        y = len(rows) - 1 - r
        ax.text(-0.3, y + 0.5, f"{name} #{len(buf)}", ha="right", va="center", fontsize=8, family="monospace")
        is_values = name == "values"
        for x, v in enumerate(_cells(buf)):
            pad = is_values and padded and v is not None and v == 0
            face = "#f0f0f0" if v is None else (ZERO if pad else ("#dde8f5" if is_values else "#f7f2e0"))
            ax.add_patch(Rectangle((x, y + 0.05), 0.95, 0.9, facecolor=face, edgecolor="#666666",
                                   hatch="///" if pad else None, linewidth=0.6))
            ax.text(x + 0.475, y + 0.5, "..." if v is None else _text(v), ha="center", va="center", fontsize=7)
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-0.1, len(rows) + 0.1)
    ax.set_axis_off()
    note = " (hatched: padding zeros)" if padded else ""
    ax.set_title(title or f"{t.tensor_format}  dims {list(t.shape)}  lvls {t.levels}{note}", fontsize=9)
    return _save(fig, path)


def _density(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], bins: int) -> np.ndarray:
    """Entries per bin of an up to ``bins x bins`` image (one ``bincount`` pass)."""
    bm, bn = max(min(shape[0], bins), 1), max(min(shape[1], bins), 1)
    r = rows * bm // max(shape[0], 1)
    c = cols * bn // max(shape[1], 1)
    return np.bincount(r * bn + c, minlength=bm * bn).reshape(bm, bn)


def draw_raw(t: StoredTensor, path: Any, bins: int = 512, title: str | None = None) -> Path:
    """The nonzero pattern of a 2-D or 3-D tensor as a density image (3-D: the three projections)."""
    from matplotlib.colors import LogNorm
    if t.ndim not in (2, 3):
        raise ValueError(f"draw_raw() shows 2-D or 3-D tensors, this one has {t.ndim} dimensions")
    dims, vals = coordinates(t, drop_zeros=True)
    dims = dims.astype(np.int64)
    pairs = [(0, 1)] if t.ndim == 2 else [(0, 1), (0, 2), (1, 2)]
    fig = _figure(5.0 * len(pairs), 5.0)
    axes = fig.subplots(1, len(pairs), squeeze=False)[0]
    names = [d.name for d in t.tensor_format.dimensions]
    for ax, (a, b) in zip(axes, pairs):
        shape = (t.shape[a], t.shape[b])
        img = _density(dims[a], dims[b], shape, bins)
        shown = np.ma.masked_equal(img, 0)
        vmax = max(int(img.max()) if img.size else 1, 1)
        ax.imshow(shown, cmap="viridis", norm=LogNorm(vmin=1, vmax=max(vmax, 2)), interpolation="nearest",
                  extent=(0, shape[1], shape[0], 0), aspect="auto")
        ax.set_facecolor("white")
        ax.set_xlabel(names[b])
        ax.set_ylabel(names[a])
    fig.suptitle(title or f"{t.shape}, {len(vals)} nonzeros: {t.tensor_format}", fontsize=9)
    return _save(fig, path)
