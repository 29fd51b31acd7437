"""A small numpy graphical model for AIM's intermediate rounds.

AIM refits its model after every measurement to choose the next one. mbi compiles a new XLA
program for every new set of cliques (~5 s each on this machine), which would make a few dozen
rounds take minutes; this module runs the same estimator in plain numpy instead: HUGIN message
passing on mbi's junction tree (``mbi.junction_tree``) and mbi's mirror descent with its
Armijo step (McKenna, Sheldon & Miklau 2019, Alg. 1), warm-started from round to round. The
final model of a release is fitted by mbi itself, warm-started from these potentials.

Tables are numpy arrays whose axes follow a clique's attribute order; everything here is
post-processing of noisy measurements.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

Clique = tuple[str, ...]


def _aligned(attrs: Clique, table: np.ndarray, target: Clique, sizes: dict[str, int]) -> np.ndarray:
    """``table`` over ``attrs`` ⊆ ``target`` as a view that broadcasts over ``target``."""
    order = sorted(range(len(attrs)), key=lambda i: target.index(attrs[i]))
    moved = np.transpose(table, order)
    inner = [attrs[i] for i in order]
    return moved.reshape([sizes[a] if a in inner else 1 for a in target])


def sum_to(attrs: Clique, table: np.ndarray, keep: Clique) -> np.ndarray:
    """Σ of ``table`` over the attributes not in ``keep``, axes in ``keep``'s order."""
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    out = table.sum(axis=axes) if axes else table
    rest = [a for a in attrs if a in keep]
    return np.transpose(out, [rest.index(a) for a in keep]) if rest else out


def _logsumexp_to(attrs: Clique, table: np.ndarray, keep: Clique) -> np.ndarray:
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    if not axes:
        return table
    top = table.max(axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.exp(table - top).sum(axis=axes)) + np.squeeze(top, axis=axes)
    rest = [a for a in attrs if a in keep]
    return np.transpose(out, [rest.index(a) for a in keep])


@dataclass
class Measurement:
    clique: Clique
    values: np.ndarray  # noisy counts, shaped like the clique
    sigma: float


@dataclass
class JunctionTree:
    """Maximal cliques, a message order and where each model clique lives."""

    sizes: dict[str, int]
    cliques: list[Clique]  # model cliques (the maximal measured cliques)
    maximal: list[Clique] = field(init=False)
    order: list[tuple[Clique, Clique]] = field(init=False)
    home: dict[Clique, Clique] = field(init=False)
    edges: list[tuple[Clique, Clique]] = field(init=False)

    def __post_init__(self) -> None:
        from mbi import Domain, junction_tree

        domain = Domain(list(self.sizes), list(self.sizes.values()))
        tree, _ = junction_tree.make_junction_tree(domain, self.cliques)
        self.maximal = [tuple(c) for c in junction_tree.maximal_cliques(tree)]
        self.order = [(tuple(i), tuple(j)) for i, j in message_passing_order(tree)]
        self.edges = [(tuple(i), tuple(j)) for i, j in tree.edges()]
        self.home = {c: next(m for m in self.maximal if set(c) <= set(m)) for c in self.cliques}

    @property
    def cells(self) -> int:
        return sum(self.size(m) for m in self.maximal)

    def size(self, clique: Clique) -> int:
        return math.prod(self.sizes[a] for a in clique)

    def marginals(self, potentials: dict[Clique, np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        """HUGIN message passing in log space: the maximal cliques' marginals, each summing
        to ``total``."""
        beliefs = {m: np.zeros([self.sizes[a] for a in m]) for m in self.maximal}
        for c, theta in potentials.items():
            m = self.home[c]
            beliefs[m] = beliefs[m] + _aligned(c, theta, m, self.sizes)
        messages: dict[tuple[Clique, Clique], np.ndarray] = {}
        for i, j in self.order:
            sep = tuple(a for a in i if a in j)
            tau = beliefs[i]
            if (j, i) in messages:
                tau = tau - _aligned(sep, messages[(j, i)], i, self.sizes)
            messages[(i, j)] = _logsumexp_to(i, tau, sep)
            beliefs[j] = beliefs[j] + _aligned(sep, messages[(i, j)], j, self.sizes)
        out = {}
        for m, b in beliefs.items():
            b = b - b.max()
            p = np.exp(b)
            out[m] = p * (total / p.sum())
        return out

    def project(self, maximal: dict[Clique, np.ndarray], clique: Clique) -> np.ndarray:
        """The marginal of a clique inside one maximal clique."""
        m = next(m for m in self.maximal if set(clique) <= set(m))
        return sum_to(m, maximal[m], clique)

    def all_pairs(self, maximal: dict[Clique, np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        """Every 1-way and 2-way marginal of the model. From each maximal clique holding an
        attribute a, P(a, ·) is carried along the tree: P(a, S) over a separator, times the
        neighbour's conditional P(M | S)."""
        names = list(self.sizes)
        out: dict[Clique, np.ndarray] = {}
        for m in self.maximal:
            for a, b in itertools.combinations(m, 2):
                key = (a, b) if names.index(a) < names.index(b) else (b, a)
                out.setdefault(key, sum_to(m, maximal[m], key))
            for a in m:
                out.setdefault((a,), sum_to(m, maximal[m], (a,)))
        for a in names:
            if (a,) not in out:  # an attribute in no clique: uniform
                out[(a,)] = np.full(self.sizes[a], total / self.sizes[a])
        neighbours: dict[Clique, list[Clique]] = {m: [] for m in self.maximal}
        for i, j in self.edges:
            neighbours[i].append(j)
            neighbours[j].append(i)
        for a in names:
            start = next((m for m in self.maximal if a in m), None)
            seen = set() if start is None else {start}
            stack = [] if start is None else [(start, maximal[start], start)]
            while stack:  # tables P(a, M) with a first, then M's attributes
                m, joint, attrs = stack.pop()
                for nb in neighbours[m]:
                    if nb in seen:
                        continue
                    seen.add(nb)
                    sep = tuple(x for x in nb if x in m and x != a)
                    keep = (a,) + sep
                    with_sep = sum_to(attrs, joint, keep) if a in attrs else None
                    marg_sep = sum_to(nb, maximal[nb], sep)
                    cond = maximal[nb] / np.where(_aligned(sep, marg_sep, nb, self.sizes) > 0,
                                                  _aligned(sep, marg_sep, nb, self.sizes), np.inf)
                    if a in nb:  # a is in the neighbour: its table already holds P(a, nb)
                        attrs_nb, table = nb, maximal[nb]
                    else:
                        attrs_nb = (a,) + nb
                        table = (_aligned(keep, with_sep, attrs_nb, self.sizes)
                                 * _aligned(nb, cond, attrs_nb, self.sizes))
                    for b in nb:
                        if b == a:
                            continue
                        key = (a, b) if names.index(a) < names.index(b) else (b, a)
                        if key not in out:
                            out[key] = sum_to(attrs_nb, table, key)
                    stack.append((nb, table, attrs_nb))
        for a, b in itertools.combinations(names, 2):  # different components: independent
            if (a, b) not in out:
                out[(a, b)] = np.outer(out[(a,)], out[(b,)]) / total
        return out


class CliqueGraph:
    """The graph of a set of cliques, as bit masks over the attributes, for asking what size
    mbi's junction tree would reach with one more clique — AIM asks it for every candidate in
    every round: ``cells()`` × 8 / 2²⁰ is mbi's ``hypothetical_model_size`` (tested), in well
    under a millisecond instead of ~60 ms at 86 attributes. mbi triangulates in the graph's
    own order when it is a tree, else by its greedy elimination (the attribute whose
    neighbourhood domain is smallest first, ties to the earlier attribute). Eliminating v makes {v} ∪ N(v) a clique of the triangulated graph; the
    maximal ones among these are its maximal cliques. A clique inside another adds no edge, so
    the answer does not depend on whether the cliques given are maximal."""

    def __init__(self, sizes: dict[str, int], cliques: list[Clique]) -> None:
        self.index = {a: i for i, a in enumerate(sizes)}
        self.dims = list(sizes.values())
        self.adjacent = [0] * len(self.dims)
        self.in_clique = 0
        for clique in cliques:
            self.in_clique |= self._add(self.adjacent, clique)
        self.known: dict[int, int] = {}  # domain sizes by mask: candidates share most of them
        self.cost = self._costs(self.adjacent, self.in_clique, range(len(self.dims)), [1] * len(self.dims))

    def _costs(self, adjacent: list[int], in_clique: int, which, cost: list[int]) -> list[int]:
        for i in which:  # mbi's greedy cost: the domain of i's neighbourhood (1 if in no clique)
            cost[i] = self._domain(adjacent[i] | 1 << i) if in_clique >> i & 1 else 1
        return cost

    def _add(self, adjacent: list[int], clique: Clique) -> int:
        mask = 0
        for a in clique:
            mask |= 1 << self.index[a]
        for a in clique:
            adjacent[self.index[a]] |= mask & ~(1 << self.index[a])
        return mask

    def _domain(self, mask: int) -> int:
        out = self.known.get(mask)
        if out is None:
            out, rest = 1, mask
            while rest:
                low = rest & -rest
                out *= self.dims[low.bit_length() - 1]
                rest ^= low
            self.known[mask] = out
        return out

    def cells(self, extra: Clique = ()) -> int:
        """The junction tree's cells over the cliques and ``extra``."""
        adjacent = list(self.adjacent)
        in_clique = self.in_clique | self._add(adjacent, extra)
        d, dims = len(adjacent), self.dims
        edges = sum(m.bit_count() for m in adjacent) // 2
        if edges and edges == d - 1 and _connected(adjacent):  # a tree: no fill, cliques = edges
            return sum(dims[i] * dims[j] for i in range(d) for j in range(i + 1, d)
                       if adjacent[i] >> j & 1)
        cost = self._costs(adjacent, in_clique, [self.index[a] for a in extra], list(self.cost))
        heap = [(c, i) for i, c in enumerate(cost)]
        heapq.heapify(heap)
        eliminated, total = 0, 0
        holding: list[list[int]] = [[] for _ in range(d)]  # earlier cliques that hold v
        while heap:
            c, v = heapq.heappop(heap)
            if eliminated >> v & 1 or c != cost[v]:
                continue  # an entry made stale by a later cost
            eliminated |= 1 << v
            rest = adjacent[v] & ~eliminated
            clique = rest | 1 << v
            # only a clique eliminated earlier and holding v can contain v's clique
            if not any(clique & earlier == clique for earlier in holding[v]):
                total += self._domain(clique)
            neighbours = rest
            while neighbours:
                low = neighbours & -neighbours
                u = low.bit_length() - 1
                neighbours ^= low
                holding[u].append(clique)
                adjacent[u] = (adjacent[u] | rest) & ~low & ~eliminated
                cost[u] = self._domain(adjacent[u] | low)
                heapq.heappush(heap, (cost[u], u))
        return total


def _connected(adjacent: list[int]) -> bool:
    seen, frontier = 1, 1
    while frontier:
        low = frontier & -frontier
        frontier ^= low
        new = adjacent[low.bit_length() - 1] & ~seen
        seen |= new
        frontier |= new
    return seen == (1 << len(adjacent)) - 1


def message_passing_order(tree) -> list[tuple[Clique, Clique]]:
    """mbi's ``junction_tree.message_passing_order`` — every directed edge of the junction tree,
    in a topological order of "i → j before j → k (k ≠ i)" — without its set: mbi collects the
    dependencies in a set of cliques, which Python iterates in the order of its per-process
    string hashes, so the order (and with it the floating-point sums of message passing) changed
    from one process to the next. Here the dependencies are added in the tree's edge order, so the
    order depends on the tree alone. ``load_mbi`` installs this function in mbi."""
    import networkx as nx

    messages = list(tree.edges()) + [(b, a) for a, b in tree.edges()]
    graph = nx.DiGraph()
    graph.add_nodes_from(messages)
    graph.add_edges_from((m1, m2) for m1 in messages for m2 in messages
                         if m1[1] == m2[0] and m1[0] != m2[1])
    return list(nx.topological_sort(graph))


def maximal_subset(cliques: list[Clique]) -> list[Clique]:
    """The cliques not inside another, largest first, in the order given (never a set's order:
    the model's cliques, hence its sums, would depend on the process's string hashing)."""
    out: list[Clique] = []
    for c in sorted(dict.fromkeys(cliques), key=len, reverse=True):
        if not any(set(c) <= set(o) for o in out):
            out.append(c)
    return out


class MirrorDescent:
    """mbi's mirror descent (Armijo step: accept when the loss drops by at least half the
    linear prediction, step × 1.01 then, else step × 0.5) on potentials over the maximal
    measured cliques, in numpy; warm-startable.

    ``frozen`` (attribute → level): levels whose potentials are never updated, so a level the
    starting potentials give no mass (log-potential -10⁴) keeps none — a gradient step would
    otherwise raise it whenever a measurement shows counts there, the step growing ×1.01 at
    each accepted iteration."""

    def __init__(self, sizes: dict[str, int], measurements: list[Measurement], total: float,
                 potentials: dict[Clique, np.ndarray] | None = None,
                 frozen: dict[str, int] | None = None) -> None:
        self.sizes, self.total = sizes, float(total)
        self.frozen = dict(frozen or {})
        self.measurements = measurements
        self.tree = JunctionTree(sizes, maximal_subset([m.clique for m in measurements]))
        self.route = {m.clique: next(c for c in self.tree.cliques if set(m.clique) <= set(c))
                      for m in measurements}
        blocks: dict[Clique, float] = {}
        for m in measurements:
            c = self.route[m.clique]
            blocks[c] = blocks.get(c, 0.0) + self.tree.size(c) / self.tree.size(m.clique) / m.sigma**2
        self.lipschitz = max(blocks.values())
        self.potentials = {c: np.zeros([sizes[a] for a in c]) for c in self.tree.cliques}
        for oc, table in (potentials or {}).items():  # warm start: the same model, re-expanded
            c = next(c for c in self.tree.cliques if set(oc) <= set(c))
            self.potentials[c] = self.potentials[c] + _aligned(oc, table, c, sizes)
        self.step = 2.0 / (self.lipschitz * self.total)

    def _clique_marginals(self, potentials) -> tuple[dict, dict]:
        maximal = self.tree.marginals(potentials, self.total)
        return maximal, {c: sum_to(self.tree.home[c], maximal[self.tree.home[c]], c)
                         for c in self.tree.cliques}

    def _loss(self, mu: dict[Clique, np.ndarray]) -> tuple[float, dict[Clique, np.ndarray]]:
        loss, grad = 0.0, {c: np.zeros_like(v) for c, v in mu.items()}
        for m in self.measurements:
            c = self.route[m.clique]
            diff = (sum_to(c, mu[c], m.clique) - m.values) / m.sigma
            loss += 0.5 * float(np.vdot(diff, diff))
            grad[c] = grad[c] + _aligned(m.clique, diff / m.sigma, c, self.sizes)
        for c, g in grad.items():
            for axis, a in enumerate(c):
                if a in self.frozen:
                    g[(slice(None),) * axis + (self.frozen[a],)] = 0.0
        return loss, grad

    def run(self, iterations: int) -> dict[Clique, np.ndarray]:
        """Iterate; return the maximal cliques' marginals of the final potentials."""
        theta = self.potentials
        maximal, mu = self._clique_marginals(theta)
        loss, grad = self._loss(mu)
        for _ in range(iterations):
            trial = {c: theta[c] - self.step * grad[c] for c in theta}
            maximal2, mu2 = self._clique_marginals(trial)
            loss2, grad2 = self._loss(mu2)
            predicted = sum(float(np.vdot(grad[c], mu[c] - mu2[c])) for c in theta)
            if loss - loss2 >= 0.5 * self.step * predicted:
                theta, maximal, mu, loss, grad = trial, maximal2, mu2, loss2, grad2
                self.step *= 1.01
            else:
                self.step *= 0.5
        self.potentials = theta
        self.loss = loss
        return maximal
