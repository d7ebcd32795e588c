"""The candidate set a stage works on, and the few numeric helpers every stage shares.

A ``Candidates`` is the list of tokens still in the running: their ids (ascending) and their
current logits (float64). A token that a stage removes leaves the set; in the full-vocabulary view
(``to_full``) its logit is -inf and its probability exactly 0. Keeping only the live tokens makes
every stage after the first truncation cost O(kept) instead of O(vocabulary), as in llama.cpp's
candidate array. Both arrays are read-only: a stage returns a new ``Candidates``, never edits one.
"""

from __future__ import annotations

import numpy as np

from inference.sampling.order import stable_argsort

#: Logits are kept within +-LOGIT_LIMIT so that no multiplication overflows to inf (and no NaN).
LOGIT_LIMIT = 1e300
# exp(d) for d below this is subnormal or 0; numpy's fast exp path stops there, so those few
# entries are evaluated separately.
_EXP_FAST_FLOOR = -708.0
# Sorting a whole vocabulary costs milliseconds; searches first try a head of the likeliest tokens.
_HEAD_FRACTION = 2.0**-6
_PREFIX_SORT_LIMIT = 4096  # up to this many tokens a search sorts them all (no head, no bands)
# Past the head, the neck: w >= max/4096 holds most of a model's remaining mass in a few hundred
# tokens (Gemma 3's own logits: 83 % of the draws past the head, 307 tokens at the median).
_NECK_FRACTION = 2.0**-12
_NECK_SORT_LIMIT = 4096
_HEAD_SUM_LIMIT = 1024  # Softmax.ahead: a larger head (a flat distribution) is summed by numpy's passes
_LOGIT_LADDER = (2.0, 8.0, 32.0)
_TOP_BLOCK = 256  # top_positions: block size of the maxima that bound the k largest
_MANTISSA_BITS = 52  # float64
_BAND_BITS = 4  # _bands: the top mantissa bits that split an octave (16 bands per octave)
_TOP_BAND = (int(np.float64(1.0).view(np.int64)) - 1) >> (_MANTISSA_BITS - _BAND_BITS)  # _bands: the band of r = 1


def frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class Softmax:
    """Probabilities of a logit vector, computed once: ``p = e / z``, ``e = exp(logit - max)``.
    The entropy, ``p`` itself and ``head`` are computed on first use (most candidate sets need none).

    ``extremes``: the logits' (max, min) when the caller already has them (the chain reads both off
    the model's float32 logits to check them): the same floats a pass over ``logits`` would give,
    so two passes are spared and nothing changes. ``e``'s largest value is exactly 1 (exp(0))."""

    __slots__ = ("d", "e", "z", "log_z", "_entropy", "_p", "_head", "_picked")

    def __init__(self, logits: np.ndarray, extremes: tuple[float, float] | None = None) -> None:
        if extremes is None:
            d = _shifted(logits, logits.max())  # <= 0; -inf only if logits spanned more than the float range
            lowest = float(d.min()) if len(d) else 0.0
        else:
            top, low = extremes
            d = _shifted(logits, top)
            lowest = low - top  # rounding is monotone: min(fl(l - top)) = fl(min(l) - top), no pass
        if lowest < _EXP_FAST_FLOOR:  # one pass instead of a mask and any()
            low = d < _EXP_FAST_FLOOR
            d = np.maximum(d, -1e4)  # exp underflows to 0 long before; avoids 0 * -inf below
            e = np.exp(np.maximum(d, _EXP_FAST_FLOOR))
            e[low] = np.exp(d[low])
        else:
            e = np.exp(d)
        self.d = d
        self.e = e
        self.z = float(e.sum())
        self.log_z = float(np.log(self.z))
        self._entropy: float | None = None
        self._p: np.ndarray | None = None
        self._head: np.ndarray | None = None
        self._picked: tuple[int, float] | None = None  # (position, sum ahead of it) from the pick's own search

    @property
    def entropy(self) -> float:
        """H = -sum p log p with log p = d - log z; in nats."""
        if self._entropy is None:
            # (einsum, not np.dot: a multithreaded BLAS call stalls for milliseconds when the cores
            # are busy with the model.)
            self._entropy = max(0.0, self.log_z - float(np.einsum("i,i->", self.e, self.d)) / self.z)
        return self._entropy

    @property
    def p(self) -> np.ndarray:
        if self._p is None:
            self._p = frozen(self.e / self.z)
        return self._p

    @property
    def head(self) -> np.ndarray:
        """Positions (ascending) of the likeliest tokens, e >= 2**-6 (``_HEAD_FRACTION`` of the
        largest, which is 1): where ``prob_prefix`` looks first, found once for the pick, top-p and
        the draw interval. Every token more likely than one of them is among them."""
        if self._head is None:
            self._head = frozen(np.flatnonzero(self.e >= _HEAD_FRACTION))
        return self._head

    def picked(self, pos: int, ahead: float) -> None:
        """The pick chose position ``pos`` having summed ``ahead`` before it (``crossing``)."""
        self._picked = (pos, ahead)

    def ahead(self, pos: int) -> float:
        """The sum of ``e`` over the tokens ahead of position ``pos`` in pick order (e descending,
        ties lower position first). For the picked token, the running sum the pick itself compared
        the draw with (``picked``): its segment of the draw bar holds the draw by construction, and
        no pass is made. Otherwise ``np.sum(e, where=e > own) + np.sum(e[:pos], where=e[:pos] ==
        own)``, the very float; when ``pos`` is in the head, so is every token ahead of it, and the
        sums are taken over the head's tokens alone (``sum_at``) instead of two passes over ``e``."""
        if self._picked is not None and self._picked[0] == pos:
            return self._picked[1]
        e = self.e
        own = e[pos]
        if len(e) <= _PREFIX_SORT_LIMIT or own < _HEAD_FRACTION or len(self.head) > _HEAD_SUM_LIMIT:
            return float(e.sum(where=e > own)) + float(e[:pos].sum(where=e[:pos] == own))
        head = self.head
        values = e[head]
        return sum_at(e, head[values > own]) + sum_at(e, head[(values == own) & (head < pos)])


def _shifted(logits: np.ndarray, top: float) -> np.ndarray:
    """float64 ``logits - top``, a new array: for logits of another dtype (the model's float32),
    converted and shifted in that one array, the same floats as converting first (float32 and
    integer values up to 2^53 convert exactly)."""
    if logits.dtype == np.float64:
        return logits - top
    d = logits.astype(np.float64)
    d -= top
    return d


def sum_at(e: np.ndarray, positions: np.ndarray) -> float:
    """``np.sum(e, where=mask)`` for the mask true at ``positions`` (ascending) alone, the same float
    without a pass over ``e``: numpy's masked sum adds the plain sum of each run of consecutive true
    entries, in order, starting from 0 (tests hold it to numpy's own, bit for bit)."""
    at, values = positions.tolist(), e[positions].tolist()  # at most _HEAD_SUM_LIMIT: plain Python beats np.split
    total, i = 0.0, 0
    while i < len(at):
        j = i
        while j + 1 < len(at) and at[j + 1] == at[j] + 1:
            j += 1
        total += values[i] if i == j else float(e[at[i] : at[j] + 1].sum())
        i = j + 1
    return total


class Candidates:
    """Token ids (ascending, unique) still in the running and their logits (float64).

    A set made by ``shifted`` (a stage that moves a few tokens' logits: logit bias, the penalties,
    DRY) holds its input's set and the moved values instead of a copy of every logit; the array is
    built the first time ``logits`` is read. A run of such stages thus copies the vocabulary's
    logits once, where the next stage reads them, instead of once per stage.

    The chain's raw set (``of_model``) holds the model's own logits (float32, read, never written)
    and makes their float64 copy only when ``logits`` is first read: the softmax and the pick need
    none (the softmax converts and shifts them in one array), so at the defaults none is made."""

    __slots__ = ("ids", "vocab_size", "_logits", "_base", "_edits", "_soft", "_extremes", "_source")

    def __init__(self, ids: np.ndarray, logits: np.ndarray, vocab_size: int, extremes: tuple[float, float] | None = None) -> None:
        """``extremes``: (max, min) of ``logits`` when the caller knows them (``Softmax`` then
        makes no pass for them)."""
        self.ids = ids
        self.vocab_size = vocab_size
        self._logits: np.ndarray | None = frozen(logits)
        self._base: Candidates | None = None  # while unbuilt: a built set with the same ids
        self._edits: tuple[tuple[np.ndarray, np.ndarray], ...] = ()  # (unique positions ascending, their values), oldest first
        self._soft: Softmax | None = None
        self._extremes = extremes
        self._source: np.ndarray | None = None  # the model's logits, while ``_logits`` is unbuilt (``of_model``)

    @classmethod
    def of_model(cls, ids: np.ndarray, source: np.ndarray, extremes: tuple[float, float]) -> Candidates:
        """Every token of the model's logits ``source`` (any float or integer dtype, within
        +-LOGIT_LIMIT, no -inf: the chain checks), with their (max, min). ``source`` is kept, not
        copied: the caller must not change it while the set (a step's trace) is in use."""
        out = cls.__new__(cls)
        out.ids, out.vocab_size, out._logits, out._base, out._edits = ids, len(source), None, None, ()
        out._soft, out._extremes, out._source = None, extremes, source
        return out

    @property
    def logits(self) -> np.ndarray:
        if self._logits is None and self._source is not None:
            self._logits, self._source = frozen(self._source.astype(np.float64)), None
        if self._logits is None:
            assert self._base is not None
            logits = self._base.logits.copy()
            for pos, values in self._edits:
                logits[pos] = values
            self._logits, self._base, self._edits = frozen(logits), None, ()
        return self._logits

    def logits_at(self, pos: np.ndarray) -> np.ndarray:
        """The logits at positions ``pos`` (a fresh array), without building an unbuilt set's array."""
        if self._logits is not None:
            return self._logits[pos]
        if self._source is not None:
            return self._source[pos].astype(np.float64)
        assert self._base is not None
        values = self._base.logits[pos]
        for edited, edits in self._edits:  # positions ascending (``shifted``)
            at = np.minimum(np.searchsorted(edited, pos), len(edited) - 1)
            hit = edited[at] == pos
            values[hit] = edits[at[hit]]
        return values

    def shifted(self, pos: np.ndarray, values: np.ndarray) -> Candidates:
        """Same tokens; the logits at positions ``pos`` (unique) become ``values``, clipped to
        +-LOGIT_LIMIT. Nothing is copied until the result's ``logits`` are read."""
        if not len(pos):
            return self  # (sets never change: the same one serves)
        pos = np.asarray(pos, dtype=np.int64)
        order = np.argsort(pos)  # sorted once here, searched by every later logits_at
        values = np.clip(np.asarray(values, dtype=np.float64), -LOGIT_LIMIT, LOGIT_LIMIT)
        edit = (pos[order], values[order])
        out = Candidates.__new__(Candidates)
        out.ids, out.vocab_size, out._logits, out._soft, out._extremes = self.ids, self.vocab_size, None, None, None
        out._source = None
        if self._base is not None:  # unbuilt itself: share its base, one more edit
            out._base, out._edits = self._base, (*self._edits, edit)
        else:
            out._base, out._edits = self, (edit,)
        return out

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def ordered_values(self) -> np.ndarray:
        """Values that order the tokens as their logits do: the model's own logits while the set
        holds them unconverted and they are floats of at most 64 bits (their conversion to float64
        is exact, so the order and the ties are the same; float32 reads half the bytes), else
        ``logits``."""
        source = self._source
        if self._logits is None and source is not None and source.dtype.kind == "f" and source.dtype.itemsize <= 8:
            return source
        return self.logits

    @property
    def full(self) -> bool:
        """True while no token has been removed: position == token id."""
        return len(self.ids) == self.vocab_size

    @property
    def softmax(self) -> Softmax:
        if self._soft is None:
            self._soft = Softmax(self.logits if self._source is None else self._source, self._extremes)
        return self._soft

    def positions(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For token ids ``tokens``: (positions here of those present, mask of which are present)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if self.full:
            return tokens, np.ones(len(tokens), dtype=bool)
        pos = np.minimum(np.searchsorted(self.ids, tokens), len(self.ids) - 1)
        hit = self.ids[pos] == tokens
        return pos[hit], hit

    def position(self, token: int) -> int | None:
        if self.full:
            return int(token)
        pos, _ = self.positions(np.array([token]))
        return int(pos[0]) if len(pos) else None

    def with_logits(self, logits: np.ndarray) -> Candidates:
        """Same tokens, new logits (a fresh array the caller gives up). Values are clipped to
        +-LOGIT_LIMIT so later arithmetic stays finite (``shifted`` for a few positions)."""
        if len(logits) and (logits.max() > LOGIT_LIMIT or logits.min() < -LOGIT_LIMIT):
            np.clip(logits, -LOGIT_LIMIT, LOGIT_LIMIT, out=logits)
        return Candidates(self.ids, logits, self.vocab_size)

    def keep(self, mask: np.ndarray) -> Candidates:
        """The tokens where ``mask`` is true; if none, the single most likely one (lowest id on ties)."""
        if not mask.any():
            mask = np.zeros(len(self.ids), dtype=bool)
            mask[int(np.argmax(self.ordered_values))] = True
        elif mask.all():
            return self
        return Candidates(frozen(self.ids[mask]), self._values_at(mask), self.vocab_size)

    def keep_positions(self, positions: np.ndarray) -> Candidates:
        """``keep`` for the mask true at ``positions`` (unique, any order): the same set, from a
        gather of those positions instead of passes over a vocabulary-sized mask."""
        if not len(positions):
            return self.keep(np.zeros(len(self.ids), dtype=bool))
        if len(positions) == len(self.ids):
            return self
        positions = np.sort(positions)  # ascending: the ids stay ascending
        return Candidates(frozen(self.ids[positions]), self._values_at(positions), self.vocab_size)

    def _values_at(self, index: np.ndarray) -> np.ndarray:
        """The float64 logits at ``index`` (positions or a mask), a fresh array; from the model's
        own logits when the float64 copy is unbuilt (the gather first, then the conversion)."""
        if self._logits is None and self._source is not None:
            return self._source[index].astype(np.float64)
        return self.logits[index]

    def to_full(self, values: np.ndarray, fill: float) -> np.ndarray:
        out = np.full(self.vocab_size, fill, dtype=np.float64)
        out[self.ids] = values
        return out


def _stable_order(key: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """``sel`` (ascending positions) sorted by ``key`` ascending, ties keeping the lower position."""
    return sel[stable_argsort(key[sel])]


def prob_prefix(
    w: np.ndarray, target: float, strict: bool, last_only: bool = False, soft: Softmax | None = None
) -> np.ndarray | None:
    """The tokens of the order "weight descending, ties lower position first" up to and including
    the first where the running sum of ``w`` reaches ``target`` (``> target`` if ``strict``, else
    ``>= target``); that crossing token comes last. None if the sum never gets there.
    ``w`` is a probability vector or ``Softmax.e`` (then ``target`` is scaled by ``z``).

    Large sets avoid a full sort: first the head w >= max/64 is tried, then the neck w >= max/4096
    when it holds at most 4,096 tokens (every token more likely than one of a set w >= c is in it,
    so its sorted prefix is the order's); failing that, tokens are put in narrow bands by the binary exponent of w (16 bands per octave, ordered like w), the
    band where the running sum crosses the target is found from band sums, and only that band is
    sorted. Tokens of earlier bands all come before it in the order, whatever their own order.
    ``last_only``: the crossing token may come alone (the pick reads nothing else), sparing the
    pass that lists the earlier bands' tokens.
    ``soft``: the ``Softmax`` whose ``e`` is ``w``: its largest value (1) and its ``head`` are
    known, which spares the passes that find them.
    """
    found = _search(w, target, strict, last_only, soft)
    return None if found is None else found[0]


def crossing(w: np.ndarray, target: float, strict: bool, soft: Softmax | None = None) -> tuple[int, float] | None:
    """``prob_prefix``'s crossing token alone: its position and the running sum just before it
    (the weight of every token ahead of it, as the search accumulated it: the sum the target was
    compared with). None if the sum never reaches the target."""
    found = _search(w, target, strict, True, soft)
    return None if found is None else (int(found[0][-1]), found[1])


def _search(w: np.ndarray, target: float, strict: bool, last_only: bool, soft: Softmax | None) -> tuple[np.ndarray, float] | None:
    """(``prob_prefix``'s positions, the running sum before the last of them) or None."""
    n = len(w)
    if n > _PREFIX_SORT_LIMIT:
        top = float(w.max()) if soft is None else 1.0
        head = np.flatnonzero(w >= top * _HEAD_FRACTION) if soft is None else soft.head
        mass = float(w[head].sum())
        if mass > target if strict else mass >= target:
            found = _prefix_in(head[stable_argsort(-w[head])], w, target, strict)
            if found is not None:
                return found
        neck = np.flatnonzero(w >= top * _NECK_FRACTION)
        if len(head) < len(neck) <= _NECK_SORT_LIMIT:
            mass = float(w[neck].sum())
            if mass > target if strict else mass >= target:
                found = _prefix_in(neck[stable_argsort(-w[neck])], w, target, strict)
                if found is not None:
                    return found
        band = _bands(w if top == 1.0 else w / top)  # Softmax.e's largest is exp(0) = 1: w / 1 is w
        sums = np.cumsum(np.bincount(band, weights=w))
        k = int(np.searchsorted(sums, target, side="right" if strict else "left"))
        if k < len(sums):
            crossing = np.flatnonzero(band == k)
            base = float(sums[k - 1]) if k else 0.0
            order = crossing[stable_argsort(-w[crossing])]
            cum = base + np.cumsum(w[order])
            j = int(np.searchsorted(cum, target, side="right" if strict else "left"))
            if j < len(order):
                ahead = float(cum[j - 1]) if j else base
                if last_only:
                    return order[j : j + 1], ahead
                return np.concatenate([np.flatnonzero(band < k), order[: j + 1]]), ahead
    return _prefix_in(stable_argsort(-w), w, target, strict)


def _bands(r: np.ndarray) -> np.ndarray:
    """Band numbers of ratios ``r`` in [0, 1] (w / max w), 16 per octave, 0 for the largest, ordered
    like ``r`` descending, zeros after every positive ratio: band ``(1 - e) · 16 + ⌊(1 - m) · 32⌋``
    for ``r = m · 2^e`` (``np.frexp``, m in [0.5, 1)), i.e. the sixteenth octaves ``(a, b]``, up
    to a constant offset. Read off the float's bits (exponent and the top four mantissa bits of
    ``r``'s predecessor bit pattern), one integer pass instead of frexp's arithmetic. (Narrow
    bands keep the one band that is sorted small: a few thousand tokens at 262k.) Subnormal
    ratios (below 2**-1022) are banded by their bits, still in order: their weights vanish in any
    running sum holding the largest one, so no sum and no pick changes."""
    bits = r.view(np.int64) - 1  # positive floats order like their bit patterns; 0 → -1
    bits >>= _MANTISSA_BITS - _BAND_BITS  # exponent and top mantissa bits of the predecessor: (a, b] bands
    return np.subtract(_TOP_BAND, bits, out=bits)


def _prefix_in(order: np.ndarray, p: np.ndarray, target: float, strict: bool) -> tuple[np.ndarray, float] | None:
    """``order``'s positions up to the first where the running sum crosses, and the sum before it."""
    cum = np.cumsum(p[order])
    k = int(np.searchsorted(cum, target, side="right" if strict else "left"))
    return (order[: k + 1], float(cum[k - 1]) if k else 0.0) if k < len(order) else None


def key_prefix(key: np.ndarray, p: np.ndarray, target: float) -> np.ndarray:
    """Positions sorted by ``key`` ascending (ties: lower position first), up to the first where
    the running probability sum is >= ``target``; all of them if it never is."""
    n = len(key)
    if n > 2048:
        for size in (64, 1024, 8192, 65536):
            if size >= n:
                break
            v = np.partition(key, size - 1)[size - 1]
            sel = np.flatnonzero(key <= v)
            if float(p[sel].sum()) >= target:
                found = _prefix_in(_stable_order(key, sel), p, target, strict=False)
                if found is not None:
                    return found[0]
    order = stable_argsort(key)
    found = _prefix_in(order, p, target, strict=False)
    return order if found is None else found[0]


def top_positions(logits: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest logits, largest first, ties: lower position first.

    A large set is first cut at the ``k``-th largest of its groups' maxima (``blocks`` groups of
    ``_TOP_BLOCK``): at least ``k`` logits reach it, so the ``k`` largest and every tie of the
    ``k``-th are among those that do, usually a few dozen (one pass instead of a partition of the
    whole vocabulary, ~2 ms at 262k). Any grouping would do; a group is every ``blocks``-th
    position (a column of ``[_TOP_BLOCK, blocks]``), so the maxima are one elementwise maximum
    down the rows, which vectorizes (half the time of a row's maximum per block at 262k)."""
    n = len(logits)
    if k >= n:
        return stable_argsort(-logits)
    blocks = n // _TOP_BLOCK
    if blocks >= max(k, 64):
        maxima = logits[: blocks * _TOP_BLOCK].reshape(_TOP_BLOCK, blocks).max(axis=0)  # [blocks]
        v = np.partition(maxima, blocks - k)[blocks - k]  # the k-th largest block maximum
        sel = np.flatnonzero(logits >= v)
        if len(sel) <= 4096:
            return _stable_order_of(logits, sel)[:k]
    else:
        top = float(logits.max())
        for width in _LOGIT_LADDER:
            sel = np.flatnonzero(logits >= top - width)
            if len(sel) >= k:
                if len(sel) <= 4096:
                    return _stable_order_of(logits, sel)[:k]
                break
    v = np.partition(logits, n - k)[n - k]  # the k-th largest value
    sel = np.flatnonzero(logits >= v)  # every tie of v included, so lower ids can win
    return _stable_order_of(logits, sel)[:k]


def _stable_order_of(logits: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """``sel`` (ascending positions) sorted by logit descending, ties keeping the lower position."""
    return sel[stable_argsort(-logits[sel])]
