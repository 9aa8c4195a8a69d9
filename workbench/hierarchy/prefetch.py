"""Searches done ahead, in worker processes: while the user looks at one hierarchy, the app's
likely next ones (the sliders' other positions, nearest first) are searched on the machine's
other cores, so that moving a slider there is a memo lookup.

A worker runs the same exact `Codesigner.layer_result` on its own memo, one (hierarchy, layer)
item at a time; the app takes its results into its `Codesigner` (`take`) before searching
anything itself, and waits for an item a worker is already searching rather than searching it
twice (`claim`). A hierarchy the app needs now is priced from both ends (`design`): the app
from its first layer, the workers from its last; a layer a worker still has when the app is
done with the others is searched by both, the first answer kept (`_race`). Its layers of many
slices (`search.sliced`) are searched in shares (`want(..., shared=True)`): every n-th slice
each, the app taking share 0 and then, like each worker, the next share nobody has started; the
least answer is the optimum (`search`, "Shares"). A worker searching something else ahead may
be made to drop it (`want(..., preempt=True)`: SIGUSR1, then `interrupt.Cancelled` at the
search's next safe point, within about 0.4 s on three levels). Nothing is approximated: a taken
result is the search's optimum, as the app's own search would give (equal energy; of several
blockings with that energy, possibly another one).

Workers are `python -m` processes (`prefetch_worker`: no fork of a kernel's threads, no
import of a script's main), each fed one hierarchy at a time through its stdin by a thread of
the app's process that waits on its stdout, so that the wanted list can be reordered at every
edit; `close`, the prefetcher's collection or the app's exit terminates them (an orphaned
worker ends at its next read).
"""

from __future__ import annotations

import pickle
import subprocess
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence

from workbench.hierarchy import interrupt
from workbench.hierarchy.codesign import Codesigner, Design
from workbench.hierarchy.levels import Hierarchy
from workbench.hierarchy.prefetch_worker import (
    PREEMPT,
    default_workers,
    key_of,
    start_worker,
    stop_workers,
)

Item = tuple  # (hierarchy, layer index): one search; (..., (k, n)): its share k of n
ItemKey = tuple  # (Key, layer index) or (Key, layer index, (k, n))


def _item_key(item: Item) -> ItemKey:
    return (key_of(item[0]), *item[1:])


# shares per process of a sliced layer needed now: each process takes the next share not
# started when it is done with one, so that they finish together
SHARES = 2
# entries kept in each of a prefetcher's logs (`started`, `cancelled`, `raced`): the latest
LOG = 4096


def _log(entries: list, key: ItemKey) -> None:
    """Append to a log, keeping its latest `LOG` entries (an app's life is long)."""
    entries.append(key)
    if len(entries) > LOG:
        del entries[:-LOG]


class Prefetcher:
    """Worker processes searching a wanted list of (hierarchy, layer) items for `designer`,
    best first (`want`); finished ones are handed over by `take`, and `design` prices a
    hierarchy here and in the workers together."""

    def __init__(self, designer: Codesigner, workers: int | None = None) -> None:
        self.designer = designer
        self._cond = threading.Condition()
        self._wanted: list[Item] = []
        self._running: dict[ItemKey, int] = {}  # item -> worker searching it
        self._done: dict[ItemKey, tuple] = {}   # item -> (hierarchy, index, result)
        self._shares: dict[ItemKey, object] = {}  # share item -> its answer
        self._shared: dict[ItemKey, int] = {}   # (Key, index) -> shares n, for `design`
        self.failed: dict[ItemKey, str] = {}    # item -> the worker's error (searched here)
        # logs (the latest `LOG` entries): items in the order workers took them; dropped
        # under way by `want(preempt=True)`; searched here too while a worker had them
        self.started: list[ItemKey] = []
        self.cancelled: list[ItemKey] = []
        self.raced: list[ItemKey] = []
        self._cancelling: set[int] = set()      # workers asked to drop their item
        self._racing: ItemKey | None = None     # item searched here while a worker has it
        self._racer: int | None = None          # the thread searching it (an ident)
        self._closed = False
        self._workers = []
        self.alive = workers or default_workers()  # workers still answering
        for index in range(workers or default_workers()):
            process = start_worker(designer)
            pump = threading.Thread(target=self._pump, args=(index, process), daemon=True,
                                    name=f"workbench-prefetch-{index}")
            self._workers.append((process, pump))
            pump.start()
        weakref.finalize(self, stop_workers, [p for p, _ in self._workers])

    def _pump(self, worker: int, process: subprocess.Popen) -> None:
        """Feed one worker, one item at a time, and keep what it sends back."""
        key = None
        try:
            if pickle.load(process.stdout) != "ready":
                raise pickle.UnpicklingError("no ready message")
            while True:
                with self._cond:
                    while not self._wanted and not self._closed:  # idle: wait for `want`
                        self._cond.wait()
                    if self._closed:
                        return
                    item = self._wanted.pop(0)
                    key = _item_key(item)
                    self._running[key] = worker
                    _log(self.started, key)
                pickle.dump(item, process.stdin)
                process.stdin.flush()
                status, payload = pickle.load(process.stdout)
                with self._cond:
                    if self._running.get(key) == worker:
                        self._running.pop(key)
                    asked = worker in self._cancelling
                    self._cancelling.discard(worker)
                    if status == "ok" and len(item) == 2:
                        self._done[key] = (*item, payload)
                        if key == self._racing:  # this process's search of it may stop
                            interrupt.request(self._racer)
                    elif status == "ok":
                        self._shares[key] = payload
                    elif status == "error":
                        self.failed[key] = payload
                    elif asked:
                        _log(self.cancelled, key)
                    else:  # a stray request: the item is still wanted
                        self._wanted.insert(0, item)
                    key = None
                    self._cond.notify_all()
        except (EOFError, OSError, pickle.UnpicklingError) as exc:  # it died or was closed
            with self._cond:
                if key is not None and self._running.get(key) == worker:
                    self._running.pop(key)
                self._cancelling.discard(worker)
                self.alive -= 1
                if key is not None and not self._closed:
                    self.failed[key] = f"worker {worker} stopped: {exc!r}"
                self._cond.notify_all()

    def want(self, hierarchies: Iterable[Hierarchy], last_layer_first: bool = False,
             preempt: bool = False, shared: bool = False) -> None:
        """Replace the wanted list: the hierarchies' layers in order (best first; each
        hierarchy's last layer first if asked). Results the designer knows, and items being
        searched or finished here, are left out. preempt: a worker searching an item not in
        the list drops it at its search's next safe point (`interrupt`) and takes the list's
        first (the item is wanted again by a later `want` that lists it). shared: the first
        hierarchy's layers that `Codesigner.shares` are wanted first as n − 1 shares (n: the
        workers alive and this process), shares 1 … n − 1; `design` searches share 0 here
        (answers held for another hierarchy's abandoned design are dropped)."""
        layers = self.designer.layers
        order = range(len(layers) - 1, -1, -1) if last_layer_first else range(len(layers))
        with self._cond:
            dropping = {k for k, w in self._running.items() if w in self._cancelling}
            seen = (set(self._running) - dropping) | set(self._done) | set(self.failed)
            wanted, listed = [], set()
            hierarchies = list(hierarchies)
            if shared and hierarchies:  # another hierarchy's abandoned shares: dropped
                keep = key_of(hierarchies[0])
                self._shares = {k: v for k, v in self._shares.items() if k[0] == keep}
                self._shared = {k: v for k, v in self._shared.items() if k[0] == keep}
            if shared and hierarchies and self.alive:
                first, n = hierarchies[0], SHARES * (self.alive + 1)
                for index, layer in enumerate(layers):
                    key = (key_of(first), index)
                    if key not in self._running and key not in self._done and \
                            self.designer.shares(layer, first):
                        self._shared[key] = n
                        listed.add(key)  # not wanted whole
                        for k in range(1, n):
                            listed.add((*key, (k, n)))
                            # a share answered for an abandoned `design` (a kernel
                            # interrupt) is taken from `_shares` by the next one
                            if (*key, (k, n)) not in self._running and \
                                    (*key, (k, n)) not in self._shares:
                                wanted.append((first, index, (k, n)))
            for hierarchy in hierarchies:
                for index in order:
                    key = (key_of(hierarchy), index)
                    if key in listed:
                        continue
                    listed.add(key)
                    if key not in seen and not self.designer.known_layer(layers[index],
                                                                         hierarchy):
                        seen.add(key)
                        wanted.append((hierarchy, index))
            self._wanted = wanted
            if preempt and PREEMPT is not None:
                for key, worker in self._running.items():
                    if key not in listed:
                        self._preempt(worker)
            self._cond.notify_all()

    def take(self) -> int:
        """Hand the finished results to the designer; the number of items taken."""
        with self._cond:
            done, self._done = self._done, {}
        layers = self.designer.layers
        for hierarchy, index, result in done.values():
            self.designer.absorb(layers[index], hierarchy, result)
        return len(done)

    def claim(self, hierarchy: Hierarchy, index: int, timeout: float | None = None) -> bool:
        """About to need the layer `index` on `hierarchy`: drop it from the wanted list and,
        when a worker is searching it, wait for that (at most `timeout` s) and take it. True
        if the designer knows it then."""
        key = (key_of(hierarchy), index)
        with self._cond:
            self._wanted = [i for i in self._wanted if (key_of(i[0]), i[1]) != key]
            self._cond.wait_for(lambda: key not in self._running or
                                self._running[key] in self._cancelling, timeout)
        self.take()
        return self.designer.known_layer(self.designer.layers[index], hierarchy)

    def design(self, hierarchy: Hierarchy,
               done: Callable[[int], object] | None = None) -> Design | None:
        """`designer.design`, layer by layer from the first, taking what the workers found
        (`want(..., last_layer_first=True)` sets them on the other end); a layer wanted in
        shares (`want(..., shared=True)`) is searched here in share 0, with the workers'. A
        layer a worker is searching is left to the end, then searched here too (`_race`):
        this process never waits while it has a search to do. `done(index)` is called as
        each layer is known (a progress bar)."""
        later = []
        for index, layer in enumerate(self.designer.layers):
            n = self._shared.pop((key_of(hierarchy), index), None)
            if n is not None and not self.designer.known_layer(layer, hierarchy):
                self.designer.absorb_shares(layer, hierarchy, self._shares_of(hierarchy, index, n))
            elif self._busy((key_of(hierarchy), index)):
                later.append(index)
                continue
            else:
                self.claim(hierarchy, index)
                self.designer.layer_result(layer, hierarchy)
            if done is not None:
                done(index)
        for index in later:
            self._race(hierarchy, index)
            if done is not None:
                done(index)
        return self.designer.design(hierarchy)

    def _busy(self, key: ItemKey) -> bool:
        """Whether a worker is searching the item (and not dropping it)."""
        with self._cond:
            return key in self._running and self._running[key] not in self._cancelling

    def _race(self, hierarchy: Hierarchy, index: int) -> None:
        """Know the layer `index` on `hierarchy`, which a worker may be searching: search it
        here as well; whichever ends first gives the result (the same optimum), the other
        search is dropped (here: `interrupt.Cancelled` when the worker's result comes in;
        there: `PREEMPT`)."""
        layer, key = self.designer.layers[index], (key_of(hierarchy), index)
        self.take()
        while not self.designer.known_layer(layer, hierarchy):
            with self._cond:
                interrupt.clear()
                self._racing = key if self._busy(key) else None
                self._racer = threading.get_ident()
                if self._racing:
                    _log(self.raced, key)
            try:
                self.designer.layer_result(layer, hierarchy)
            except interrupt.Cancelled:  # the worker's result came in, or the design is
                if interrupt.abandoned():  # no longer wanted (`interrupt.abandon`)
                    raise
            finally:
                with self._cond:
                    self._racing = None
                    interrupt.clear()  # a request come after the search ended is void
            self.take()
        self._drop(key)

    def _drop(self, key: ItemKey) -> None:
        """Ask the worker searching the item, if any, to drop it."""
        with self._cond:
            if key in self._running:
                self._preempt(self._running[key])

    def _preempt(self, worker: int) -> None:
        """Ask the worker to drop its item (the lock held)."""
        if worker in self._cancelling or PREEMPT is None:
            return
        self._cancelling.add(worker)
        try:
            self._workers[worker][0].send_signal(PREEMPT)
        except OSError:  # it has just ended: its pump says so
            pass

    def designs(self, hierarchies: Iterable[Hierarchy]) -> Iterator[Design | None]:
        """`design` of each hierarchy in order, the list priced from both ends: this process
        from its first hierarchy, the workers from its last (last layer first)."""
        hierarchies = list(hierarchies)
        self.want(hierarchies[::-1], last_layer_first=True)
        for hierarchy in hierarchies:
            yield self.design(hierarchy)

    def _shares_of(self, hierarchy: Hierarchy, index: int, n: int) -> list:
        """Every share's answer for the layer: share 0 here, then the last share no worker
        has started (and any a worker failed, dropped or died with) until none is left, each
        started from the answers here; then the workers' (waiting for them)."""
        layer = self.designer.layers[index]
        with interrupt.part(0, n):  # the status line shows the layer's fraction, not a share's
            found = [self.designer.layer_share(layer, hierarchy, (0, n))]
        left = {(hierarchy, index, (k, n)) for k in range(1, n)}
        while True:
            with self._cond:
                for item in list(left):
                    if _item_key(item) in self._shares:
                        found.append(self._shares.pop(_item_key(item)))
                        left.discard(item)
                        interrupt.progress(len(found) / n)
                mine = next((i for i in reversed(self._wanted) if i in left), None) or \
                    next((i for i in left if _item_key(i) not in self._running), None)
                if mine is None and left:
                    self._cond.wait(0.1)
                    if interrupt.abandoned():  # the design is no longer wanted
                        raise interrupt.Cancelled("design abandoned")
                    continue
                if mine in self._wanted:
                    self._wanted.remove(mine)
                left.discard(mine)
            if mine is None:
                return found
            with interrupt.part(len(found), n):  # its shares known (some the workers')
                found.append(self.designer.layer_share(layer, hierarchy, mine[2], found))

    @property
    def pending(self) -> list[Item]:
        """The wanted items no worker has started, best first."""
        with self._cond:
            return list(self._wanted)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is wanted or running, or no worker is left (at most `timeout`
        s); True if so."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._wanted and not self._running or not self.alive, timeout)

    def close(self) -> None:
        """Stop the workers (a search under way is abandoned)."""
        with self._cond:
            self._closed = True
            self._wanted = []
            self._cond.notify_all()
        stop_workers([process for process, _ in self._workers])
        for _, pump in self._workers:
            pump.join(5)


def designs_together(designer: Codesigner, hierarchies: Iterable[Hierarchy],
                     workers: int | None = None) -> Iterator[Design | None]:
    """`designer.design` of each hierarchy in order (None: some layer fits no blocking), the
    list priced from both ends: this process from its first hierarchy, `workers` worker
    processes from its last (last layer first), until they meet. The results are the
    designer's own searches' (exact), whichever process ran them."""
    prefetcher = Prefetcher(designer, workers)
    try:
        yield from prefetcher.designs(hierarchies)
    finally:
        prefetcher.close()


def nearest_first(points: Sequence[tuple[int, ...]], at: tuple[int, ...],
                  make: Callable[[tuple[int, ...]], Hierarchy], limit: int) -> list[Hierarchy]:
    """The `limit` points nearest `at` (sum of slider steps, then lexicographic), as
    hierarchies; `at` itself is left out."""
    ranked = sorted((sum(abs(a - b) for a, b in zip(p, at, strict=True)), p)
                    for p in points if p != at)
    return [make(p) for _, p in ranked[:limit]]
