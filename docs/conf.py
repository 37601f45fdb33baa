"""Sphinx configuration of the documentation site (``make docs``: HTML in docs/_build/html)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "ust-mlir"
author = "the ust-mlir authors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "developers.md"]
myst_heading_anchors = 3
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "none"  # signatures stay readable; the docstrings say what each argument is
autodoc_member_order = "bysource"
html_theme = "alabaster"
html_title = "ust-mlir"
html_theme_options = {"description": "Sparse tensors in any format, compiled with MLIR", "page_width": "1360px",
                      "sidebar_width": "230px", "body_max_width": "none"}


def _load_lazy_names() -> None:
    """``frontend`` loads its public names on first use (PEP 562): load them all so autodoc lists them."""
    import frontend

    for name in frontend.__all__:
        getattr(frontend, name)


_load_lazy_names()
