"""Word streams from real word-frequency lists (``wordfreq``), and labeled documents for Naive Bayes.

``wordfreq``'s English "large" list has 321k words with p1 = 5.4 % ("the"): sampled by frequency it
is an offline stand-in for the PKG paper's tweet-word stream (TW, p1 = 2.67 %).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from skewbench.bounds import KEYS, MAX_IN_MEMORY, Range
from skewbench.stream import Stream
from skewbench.workloads.registry import workload
from skewbench.workloads.synthetic import RATE


@lru_cache(maxsize=8)
def vocabulary(lang: str, wordlist: str = "large") -> tuple[np.ndarray, np.ndarray]:
    """``(words, probabilities)`` of a wordfreq list, most frequent first."""
    import wordfreq

    if lang not in wordfreq.available_languages(wordlist):
        known = " ".join(sorted(wordfreq.available_languages(wordlist)))
        raise ValueError(f"wordfreq has no {wordlist!r} list for lang={lang!r}; languages: {known}")
    table = wordfreq.get_frequency_dict(lang, wordlist)
    words = np.array(list(table), dtype=object)
    freqs = np.fromiter(table.values(), dtype=np.float64, count=len(table))
    return words, freqs / freqs.sum()


def _top(lang: str, wordlist: str, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    words, probs = vocabulary(lang, wordlist)
    if vocab < 0:
        raise ValueError(f"vocab must be >= 0 (0 = the whole list), got {vocab}")
    if vocab:
        words, probs = words[:vocab], probs[:vocab] / probs[:vocab].sum()
    return words, probs


def _sample(probs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf / cdf[-1], rng.random(n), side="right"), len(probs) - 1)


def _compact(name: str, word_idx: np.ndarray, words: np.ndarray, **columns) -> Stream:
    used, ids = np.unique(word_idx, return_inverse=True)
    return Stream(name, ids.astype(np.int64), words[used], rate=RATE, **columns)


@workload("wordfreq", {"vocab": Range(0, KEYS.high, integer=True)}, whole=True)
def word_stream(messages: int = 10_000_000, seed: int = 0, *, lang: str = "en", wordlist: str = "large",
                vocab: int = 0) -> Stream:
    """Words sampled by their frequency in a wordfreq list (vocab = keep the top N words; 0 = all)."""
    words, probs = _top(lang, wordlist, vocab)
    return _compact("wordfreq", _sample(probs, messages, np.random.default_rng(seed)), words)


@workload("docs", {"classes": Range(2, KEYS.high, integer=True), "doc_words": Range(1, MAX_IN_MEMORY, integer=True),
                  "vocab": Range(0, KEYS.high, integer=True), "topic_words": KEYS, "boost": Range(0, 1e9, above=True)},
          whole=True)
def documents(messages: int = 1_000_000, seed: int = 0, *, classes: int = 4, doc_words: int = 20,
              vocab: int = 20_000, topic_words: int = 200, boost: float = 20.0, lang: str = "en") -> Stream:
    """Labeled documents for Naive Bayes: one message per word; payload doc id and class label.

    Each class draws from the language's word frequencies with its own ``topic_words`` boosted
    ``boost`` times, so a Naive Bayes model trained on the stream can tell the classes apart.
    """
    if classes < 2 or doc_words < 1 or topic_words < 1 or boost <= 0:
        raise ValueError("need classes >= 2, doc_words >= 1, topic_words >= 1 and boost > 0")
    words, base = _top(lang, "large", vocab)
    if classes * topic_words > len(words):
        raise ValueError(f"classes * topic_words = {classes * topic_words} exceeds the vocabulary ({len(words)})")
    rng = np.random.default_rng(seed)
    topics = rng.permutation(len(words))[: classes * topic_words].reshape(classes, topic_words)
    docs = np.arange(messages, dtype=np.int64) // doc_words
    doc_class = rng.integers(0, classes, int(docs[-1]) + 1)
    labels = doc_class[docs]
    word_idx = np.empty(messages, dtype=np.int64)
    for c in range(classes):
        probs = base.copy()
        probs[topics[c]] *= boost
        rows = np.flatnonzero(labels == c)
        word_idx[rows] = _sample(probs, len(rows), rng)
    return _compact("docs", word_idx, words, payload={"doc": docs, "label": labels.astype(np.int64)})
