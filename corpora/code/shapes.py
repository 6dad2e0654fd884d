#!/usr/bin/env python3
"""Shapes and a small registry: decorators, nested classes, CJK identifiers."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

# ユーザー名 and other Japanese identifiers are valid Python (PEP 3131).
ユーザー名 = "山田太郎"  # 既定のユーザー


def get_user() -> str:
    """Return the current user's name (ユーザーの名前)."""
    return ユーザー名


def registered(kind: str):
    """Class decorator: remember every shape under ``kind``."""

    def wrap(cls):
        REGISTRY.setdefault(kind, []).append(cls)
        return cls

    return wrap


REGISTRY: dict[str, list[type]] = {}


@registered("round")
@dataclass(frozen=True)
class Circle:
    """A circle of a given radius."""

    radius: float

    @property
    def area(self) -> float:
        # πr², nothing fancy
        return math.pi * self.radius**2

    @functools.cached_property
    def perimeter(self) -> float:
        return 2 * math.pi * self.radius


@registered("polygon")
@dataclass
class Polygon:
    points: list[tuple[float, float]] = field(default_factory=list)

    class Edge:
        """One side of the polygon."""

        def __init__(self, a, b):
            self.a = a
            self.b = b

        class Metrics:
            def length(self, edge) -> float:
                (x1, y1), (x2, y2) = edge.a, edge.b
                return math.hypot(x2 - x1, y2 - y1)

        def __repr__(self) -> str:
            return f"Edge({self.a!r}, {self.b!r})"

    def edges(self):
        pts = self.points
        for i, a in enumerate(pts):
            b = pts[(i + 1) % len(pts)]
            yield Polygon.Edge(a, b)

    def area(self) -> float:
        """Shoelace formula."""
        total = 0.0
        for edge in self.edges():
            (x1, y1), (x2, y2) = edge.a, edge.b
            total += x1 * y2 - x2 * y1
        return abs(total) / 2


class 図形の集まり:
    """図形をまとめて扱うクラス。面積の合計を返す。"""

    def __init__(self, 図形たち):
        self.図形たち = list(図形たち)

    def 合計面積(self) -> float:
        # 全ての図形の面積を足す
        return sum(図形.area if isinstance(図形, Circle) else 図形.area() for 図形 in self.図形たち)


def describe(shapes, *, verbose=False, width=72, fill="-", header="Shapes", footer=None, indent=2):
    lines = [header, fill * width]
    for shape in shapes:
        name = type(shape).__name__
        if verbose:
            lines.append(" " * indent + f"{name}: area={shape.area if isinstance(shape, Circle) else shape.area():.3f}")
        else:
            lines.append(" " * indent + name)
    if footer is not None:
        lines.append(footer)
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe([Circle(1.0), Polygon([(0, 0), (1, 0), (1, 1)])], verbose=True))
    print(get_user())
