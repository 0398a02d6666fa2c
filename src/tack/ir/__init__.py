"""Tack's immutable IR: node classes, traversal, printer, verifier, passes, cost."""

from . import expressions, statements
from .node import Node, Span, NO_SPAN
from .printer import format_function
from .traversal import children, rewrite, walk

__all__ = ["expressions", "statements", "Node", "Span", "NO_SPAN",
           "format_function", "children", "rewrite", "walk"]
