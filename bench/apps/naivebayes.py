"""Multinomial Naive Bayes on a stream of labeled documents (PKG paper §VI-A), with held-out queries.

Messages are word occurrences ``(word, doc, label)`` (workload ``docs``).  Every ``query_every``-th
document (``doc % query_every == 0``, deterministic) is held out as a *query*; all other rows train.

* **Training** rows are stored at their routed worker, which adds one to its count of
  (word, class) and remembers the document's class (for the class priors).
* **Query** rows are probes sent to every holder of the word (1 worker under kg, 2 under pkg, W
  under sg — PKG §VI-A), stored nowhere.  A worker outputs one row per probe it receives, so the
  outputs record each query word's probe fan-out.
* **When a query sees the model.**  Queries are classified at the end of the stream against the
  final model: the reply of each probed worker is its *final* partial count of (word, class),
  read from its final state by :meth:`NaiveBayes.combine`.  This is the simplest definition that is
  exact under every scheme and every batching (a reply at probe time would depend on which
  training rows of other sources had reached the worker in the same micro-batch).  A query word's
  counts are therefore exact only if every worker that trained on the word was probed — which is
  what the fan-out rule guarantees and what dropping probes breaks.

The classifier: ``log P(c) + Σ_words log((n_wc + α) / (n_c + α V))`` with Laplace smoothing α, class
priors from the training documents, ``V`` = distinct training words; ties go to the lower class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from skewbench.bench.apps.base import App, copies, register_app
from skewbench.counts import add_counts, present
from skewbench.stream import Stream

OUTPUT_COLUMNS = ["seq", "worker", "doc", "fp", "label"]
DOC_WORDS, SYNTHETIC_CLASSES = 20, 4  # documents made from a plain keyed stream (NaiveBayes.prepare)


@dataclass
class Verdict:
    """The aggregator's answer: the merged model's size and every query document's verdict."""

    vocabulary: int  # distinct training words (V)
    class_docs: np.ndarray  # training documents per class (the priors)
    class_words: np.ndarray  # training word occurrences per class (n_c)
    query_seq: np.ndarray  # every query word occurrence, in stream order
    query_counts: np.ndarray = field(repr=False)  # (occurrences, classes) training counts of that word
    docs: np.ndarray = field(repr=False)  # query documents, ascending
    truth: np.ndarray = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    scores: np.ndarray = field(repr=False)  # (docs, classes) log posteriors (unnormalised)
    accuracy: float = 0.0
    probes_per_word: float = 0.0  # mean probe rows per query word (1 for the reference)


def classify(doc: np.ndarray, label: np.ndarray, seq: np.ndarray, counts: np.ndarray, class_docs: np.ndarray,
             class_words: np.ndarray, vocabulary: int, alpha: float, probes_per_word: float = 1.0) -> Verdict:
    """Score query word occurrences (``doc``, true ``label``, ``seq``, per-class ``counts``) — shared
    by :meth:`NaiveBayes.combine` and :meth:`NaiveBayes.reference` so equal counts give equal floats."""
    order = np.argsort(seq, kind="stable")
    doc, label, seq, counts = doc[order], label[order], seq[order], counts[order]
    docs, first, inverse = np.unique(doc, return_index=True, return_inverse=True)
    total_docs = max(int(class_docs.sum()), 1)
    with np.errstate(divide="ignore"):
        prior = np.log(class_docs / total_docs)
    word_ll = np.log((counts + alpha) / (class_words + alpha * vocabulary))
    scores = np.tile(prior, (len(docs), 1))
    np.add.at(scores, inverse, word_ll)
    predicted = np.argmax(scores, axis=1) if len(docs) else np.empty(0, dtype=np.int64)
    truth = label[first]
    accuracy = float(np.mean(predicted == truth)) if len(docs) else 0.0
    return Verdict(vocabulary, class_docs, class_words, seq, counts, docs, truth, predicted, scores, accuracy,
                   probes_per_word)


@register_app
class NaiveBayes(App):
    """Naive Bayes word-count model with held-out query documents; see the module docstring."""

    name = "naivebayes"
    default_workload = "docs:classes=4"
    payload_columns = ("doc", "label")
    probes_read_final_state = True  # a query reads its probed workers' final counts (module docstring)

    def __init__(self, query_every: int = 10, alpha: float = 1.0):
        if int(query_every) < 2 or alpha <= 0:
            raise ValueError(f"need query_every >= 2 and alpha > 0, got {query_every}, {alpha}")
        self.query_every, self.alpha = int(query_every), float(alpha)

    def is_query(self, doc: np.ndarray) -> np.ndarray:
        return np.asarray(doc) % self.query_every == 0

    def prepare(self, stream: Stream) -> Stream:
        """A keyed stream without documents gets them from its order: every ``DOC_WORDS`` consecutive
        messages form a document, labelled by its first word (so the classes follow the key
        distribution); the routing and probe fan-out, which is what a scheme changes, are the same."""
        if "doc" in stream.payload and "label" in stream.payload:
            return stream
        doc = np.arange(stream.messages, dtype=np.int64) // DOC_WORDS
        label = (stream.ids[doc * DOC_WORDS] % SYNTHETIC_CLASSES).astype(np.int64)
        return dataclasses.replace(stream, payload={**stream.payload, "doc": doc, "label": label})

    def fan_out(self, scheme, fps, routes, batch):
        query = self.is_query(batch["doc"].to_numpy())
        return copies(scheme, fps, routes, store=~query, probe=query, probe_store_worker=True)

    def new_state(self, worker: int) -> dict:
        return {"fps": np.empty(0, dtype=np.int64), "counts": np.empty((0, 0), dtype=np.int64),
                "docs": np.empty(0, dtype=np.int64), "doc_labels": np.empty(0, dtype=np.int64)}

    def process(self, state, rows):
        store = (rows["role"] == "store").to_numpy()
        fps = rows["fp"].to_numpy(dtype=np.int64)[store]
        labels = rows["label"].to_numpy(dtype=np.int64)[store]
        docs = rows["doc"].to_numpy(dtype=np.int64)[store]
        words, inverse = np.unique(fps, return_inverse=True)
        width = int(labels.max()) + 1 if len(labels) else 0
        counts = np.zeros((len(words), width), dtype=np.int64)
        np.add.at(counts, (inverse, labels), 1)
        keys, totals = add_counts(state["fps"], state["counts"], words, counts)
        all_docs, first = np.unique(np.concatenate([state["docs"], docs]), return_index=True)
        doc_labels = np.concatenate([state["doc_labels"], labels])[first]
        out = pd.DataFrame({c: rows[c].to_numpy()[~store] for c in OUTPUT_COLUMNS}, columns=OUTPUT_COLUMNS)
        return {**state, "fps": keys, "counts": totals, "docs": all_docs, "doc_labels": doc_labels}, out

    def state_entries(self, state) -> int:
        return len(state["fps"])

    def take(self, state, fps, to):
        """The counts of the words ``fps``; the worker remembers where they went, so that a query it
        answered before they left gets its reply from their new worker (:meth:`combine`)."""
        going = present(state["fps"], fps)
        gone_fps, gone_to = state.get("gone", (np.empty(0, np.int64), np.empty(0, np.int64)))
        stay = ~np.isin(gone_fps, fps)
        gone_fps, gone_to = np.r_[gone_fps[stay], fps], np.r_[gone_to[stay], np.full(len(fps), to)]
        order = np.argsort(gone_fps, kind="stable")
        left = {**state, "fps": state["fps"][~going], "counts": state["counts"][~going],
                "gone": (gone_fps[order], gone_to[order])}
        return left, {"fps": state["fps"][going], "counts": state["counts"][going], "moved": np.asarray(fps)}

    def put(self, state, part):
        keys, counts = add_counts(state["fps"], state["counts"], part["fps"], part["counts"])
        state = {**state, "fps": keys, "counts": counts}
        if "gone" in state:  # words that come back answer here again
            gone_fps, gone_to = state["gone"]
            back = np.isin(gone_fps, part["moved"])  # counted here or only probed: either way, here now
            state["gone"] = (gone_fps[~back], gone_to[~back])
        return state

    def combine(self, outputs, states) -> Verdict:
        width = max([s["counts"].shape[1] for s in states] + [int(outputs["label"].max()) + 1 if len(outputs) else 0])
        keys, model = np.empty(0, dtype=np.int64), np.empty((0, width), dtype=np.int64)
        docs, doc_labels = [], []
        for s in states:
            keys, model = add_counts(keys, model, s["fps"], s["counts"])
            docs.append(s["docs"])
            doc_labels.append(s["doc_labels"])
        _, first = np.unique(np.concatenate(docs), return_index=True)
        class_docs = np.bincount(np.concatenate(doc_labels)[first], minlength=width)
        # Each probed worker's reply: its final count of (word, class).
        seq = outputs["seq"].to_numpy(dtype=np.int64)
        replies = np.zeros((len(outputs), width), dtype=np.int64)
        fps, holder = outputs["fp"].to_numpy(np.int64), _final_holders(states, outputs)
        for w in np.unique(holder):
            at = np.flatnonzero(holder == w)
            replies[at] = _lookup(states[w]["fps"], states[w]["counts"], fps[at], width)
        occurrences, first, inverse = np.unique(seq, return_index=True, return_inverse=True)
        counts = np.zeros((len(occurrences), width), dtype=np.int64)
        np.add.at(counts, inverse, replies)
        return classify(outputs["doc"].to_numpy(np.int64)[first], outputs["label"].to_numpy(np.int64)[first],
                        occurrences, counts, class_docs, model.sum(axis=0), len(keys), self.alpha,
                        probes_per_word=len(outputs) / max(len(occurrences), 1))

    def reference(self, stream: Stream) -> Verdict:
        self.check(stream)
        doc = np.asarray(stream.payload["doc"], dtype=np.int64)
        label = np.asarray(stream.payload["label"], dtype=np.int64)
        fps = stream.fps.view(np.int64)
        width = int(label.max()) + 1 if len(label) else 0
        train = ~self.is_query(doc)
        words, inverse = np.unique(fps[train], return_inverse=True)
        model = np.zeros((len(words), width), dtype=np.int64)
        np.add.at(model, (inverse, label[train]), 1)
        _, first = np.unique(doc[train], return_index=True)
        class_docs = np.bincount(label[train][first], minlength=width)
        query = np.flatnonzero(~train)
        return classify(doc[query], label[query], query.astype(np.int64), _lookup(words, model, fps[query], width),
                        class_docs, model.sum(axis=0), len(words), self.alpha)

    def same(self, a: Verdict, b: Verdict) -> bool:
        arrays = ("class_docs", "class_words", "query_seq", "query_counts", "docs", "truth", "predicted", "scores")
        return (a.vocabulary == b.vocabulary and a.accuracy == b.accuracy
                and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in arrays))


def _final_holders(states: list, outputs: pd.DataFrame) -> np.ndarray:
    """The worker whose final state answers each probe: the probed one, or, when the word moved on
    (:meth:`NaiveBayes.take`), the worker it went to, followed as far as it went."""
    holder, fps = outputs["worker"].to_numpy(np.int64).copy(), outputs["fp"].to_numpy(np.int64)
    for _ in range(len(states) + 1):  # a chain visits a worker at most once: one coming back drops its entry
        moved = False
        for w in np.unique(holder):
            gone_fps, gone_to = states[w].get("gone", (np.empty(0, np.int64), None))
            if not len(gone_fps):
                continue
            at = np.flatnonzero(holder == w)
            where = np.minimum(np.searchsorted(gone_fps, fps[at]), len(gone_fps) - 1)
            hit = gone_fps[where] == fps[at]
            holder[at[hit]] = gone_to[where[hit]]
            moved |= bool(hit.any())
        if not moved:
            return holder
    raise ValueError("a word's moves form a cycle: a worker handed a word on and never got it back")


def _lookup(keys: np.ndarray, counts: np.ndarray, fps: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``counts`` (padded to ``width`` classes) for ``fps``; zeros for absent keys."""
    out = np.zeros((len(fps), width), dtype=np.int64)
    if len(keys):
        at = np.minimum(np.searchsorted(keys, fps), len(keys) - 1)
        hit = keys[at] == fps
        out[hit, : counts.shape[1]] = counts[at[hit]]
    return out
