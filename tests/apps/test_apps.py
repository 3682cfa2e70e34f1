"""The three apps under every scheme, through the in-process pipeline, against their references."""

from __future__ import annotations

import pickle
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest

from skewbench.bench.apps import APPS, make_app
from skewbench.bench.apps.base import Copies, copies, copy_rows, stream_rows
from skewbench.bench.apps.local import run_in_process
from skewbench.bench.apps.wordcount import top_k
from skewbench.scheme import make_scheme
from skewbench.simulator.engine import simulate
from skewbench.sources import prepare_scheme
from skewbench.stream import Stream
from skewbench.workloads import parse

SCHEMES = ["kg", "sg", "pkg", "dchoices", "wchoices", "dkg", "consistent", "potc", "llfd", "mintable", "minmig",
           "mixed", "mixed-brute", "gedik-redist", "gedik-readj"]
WORKLOADS = {"wordcount": "zipf:z=1.2,keys=400", "selfjoin": "ticks:symbols=200", "naivebayes": "docs:classes=4"}
PARAMS = {"selfjoin": {"window": 60}}
W, S, BATCH, N = 6, 3, 300, 4_000


@lru_cache
def stream_for(app: str, messages: int = N) -> Stream:
    return parse(WORKLOADS[app], messages=messages, seed=3)


@lru_cache
def reference(app: str):
    return make_app(app, **PARAMS.get(app, {})).reference(stream_for(app))


def run(app_name: str, scheme, **options):
    app = make_app(app_name, **PARAMS.get(app_name, {}))
    options = {"workers": W, "sources": S, "batch": BATCH, **options}
    return app, run_in_process(app, stream_for(app_name), scheme, **options)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("app_name", sorted(APPS))
def test_every_scheme_gives_the_reference_answer(app_name, scheme):
    app, result = run(app_name, scheme)
    assert app.same(result.answer, reference(app_name))


@pytest.mark.parametrize("app_name", sorted(APPS))
def test_key_split_sources_and_other_schemes(app_name):
    for scheme in ("on-greedy", "off-greedy", "pkg-global", "gedik-scan"):
        app, result = run(app_name, scheme, split="key", sources=4)
        assert app.same(result.answer, reference(app_name)), scheme


def test_llfd_run_uses_a_nonempty_plan():
    scheme = prepare_scheme("llfd", W, stream_for("wordcount"))
    assert scheme.table_size() > 0  # the exactness test above is not vacuous


def test_answers_are_not_trivial():
    assert len(reference("selfjoin")) > N  # many pairs
    verdict = reference("naivebayes")
    assert len(verdict.docs) == N // 20 // 10  # docs of 20 words, every 10th a query
    assert verdict.accuracy > 0.5  # four classes: chance is 0.25


def test_dropped_probes_break_exactness():
    """Probes only to the store worker: pkg self-join misses pairs, Naive Bayes misses counts."""

    def store_only(app):
        real = app.fan_out

        def fan_out(scheme, fps, routes, batch):
            sent = real(scheme, fps, routes, batch)
            return Copies(*(part[sent.store] for part in sent))
        app.fan_out = fan_out
        return app

    join = store_only(make_app("selfjoin", **PARAMS["selfjoin"]))
    answer = run_in_process(join, stream_for("selfjoin"), "pkg", W, S, BATCH).answer
    assert len(answer) < len(reference("selfjoin"))
    bayes = make_app("naivebayes")
    real = bayes.fan_out

    def one_probe(scheme, fps, routes, batch):  # each query word asks its routed worker only
        sent = real(scheme, fps, routes, batch)
        keep = sent.store | (sent.worker == routes[sent.row])
        return Copies(*(part[keep] for part in sent))
    bayes.fan_out = one_probe
    verdict = run_in_process(bayes, stream_for("naivebayes"), "pkg", W, S, BATCH).answer
    assert verdict.probes_per_word == 1
    assert not bayes.same(verdict, reference("naivebayes"))


@pytest.mark.parametrize("scheme, fanout", [("kg", 1), ("pkg", 2), ("sg", W)])
def test_naive_bayes_records_probe_fan_out(scheme, fanout):
    _, result = run("naivebayes", scheme)
    assert result.answer.probes_per_word == fanout
    assert result.probes.sum() == fanout * len(reference("naivebayes").query_seq)


@pytest.mark.parametrize("app_name", sorted(APPS))
def test_states_pickle_and_counters(app_name):
    app, result = run(app_name, "pkg")
    for state in result.states:
        twin = pickle.loads(pickle.dumps(state))
        assert app.state_entries(twin) == app.state_entries(state)
    _, unpickled = run(app_name, "pkg", pickle_states=False)
    assert app.same(unpickled.answer, result.answer)
    assert result.counters == sum(app.state_entries(s) for s in result.states)


@pytest.mark.parametrize("scheme", ["kg", "pkg", "potc", "dchoices"])
def test_word_count_loads_and_counters_match_the_simulator(scheme):
    stream = stream_for("wordcount")
    _, result = run("wordcount", scheme)
    sim = simulate(stream, scheme, W, S, interval=BATCH)
    assert np.array_equal(result.stores, np.bincount(sim.routes, minlength=W))
    assert result.counters == sim.row["counters"]  # state_entries = distinct (worker, key) pairs


def test_bad_streams_and_names():
    plain = Stream("plain", np.arange(100) % 7)
    make_app("wordcount").check(plain)  # word count runs on any stream
    with pytest.raises(ValueError, match="price.*ticks"):
        make_app("selfjoin").check(plain)
    with pytest.raises(ValueError, match="doc, label"):
        make_app("naivebayes").check(stream_for("selfjoin"))
    with pytest.raises(ValueError, match="known apps: naivebayes selfjoin wordcount"):
        make_app("wordcoutn")
    with pytest.raises(ValueError, match="window"):
        make_app("selfjoin", window=0)


def test_fan_out_refuses_a_route_outside_the_holders():
    """Naive Bayes answers a query from its word's holders, so a word stored elsewhere is refused."""
    app, stream = make_app("naivebayes"), stream_for("naivebayes", 40)
    scheme = make_scheme("kg", W)
    batch = stream_rows(stream, app)
    wrong = (scheme.route_many(stream.fps) + 1) % W
    with pytest.raises(ValueError, match="not among its holders"):
        app.fan_out(scheme, stream.fps, wrong, batch)
    store = np.ones(40, bool)
    sent = copies(scheme, stream.fps, (wrong - 1) % W, store=store, probe=~store)
    assert sent.row.tolist() == list(range(40)) and sent.store.all()
    rows = copy_rows(batch, sent)
    assert rows.columns[-2:].tolist() == ["worker", "role"] and (rows["worker"] == (wrong - 1) % W).all()


@pytest.mark.parametrize("name", ["kg", "pkg", "sg"])
def test_word_count_stores_each_message_where_it_is_routed_as_copies_would(name):
    """Word count never probes: its copies skip the holders (no rule reads them) and equal copies'."""
    app, stream = make_app("wordcount"), stream_for("wordcount", 200)
    scheme = make_scheme(name, W)
    routes = scheme.route_many(stream.fps)
    store = np.ones(200, bool)
    ours, generic = app.fan_out(scheme, stream.fps, routes, stream_rows(stream, app)), copies(
        scheme, stream.fps, routes, store=store, probe=~store)
    for mine, theirs in zip(ours, generic):
        assert mine.dtype == theirs.dtype and mine.tolist() == theirs.tolist()


def test_self_join_reference_is_a_direct_scan():
    stream = parse("ticks:symbols=5", messages=300, seed=1)
    keys, price = stream.ids, stream.payload["price"]
    expected = [(a, b, price[b] - price[a]) for b in range(300) for a in range(max(0, b - 20), b) if keys[a] == keys[b]]
    got = make_app("selfjoin", window=20).reference(stream)
    assert list(got.itertuples(index=False, name=None)) == sorted(expected)


def _deliver_out_of_order(app, stream, scheme_name, lateness, seed=0):
    """Every worker's rows in batches of 600, arriving up to ``lateness`` messages late."""
    scheme = make_scheme(scheme_name, W)
    batch = stream_rows(stream, app)
    rows = copy_rows(batch, app.fan_out(scheme, stream.fps, scheme.route_many(stream.fps), batch))
    arrival = rows["seq"].to_numpy() + np.random.default_rng(seed).integers(0, lateness + 1, len(rows))
    rows = rows.iloc[np.argsort(arrival, kind="stable")].reset_index(drop=True)
    states, outputs = [app.new_state(w) for w in range(W)], []
    for lo in range(0, len(rows), 600):
        part = rows.iloc[lo:lo + 600]
        for w, mine in part.groupby("worker"):
            states[w], out = app.process(states[w], mine.reset_index(drop=True))
            outputs.append(out)
    return app.combine(pd.concat(outputs, ignore_index=True), states)


def test_self_join_tolerates_declared_lateness_only():
    stream = stream_for("selfjoin", 2_000)
    late = make_app("selfjoin", window=60, lateness=150)
    for scheme in ("pkg", "sg"):
        assert late.same(_deliver_out_of_order(late, stream, scheme, 150), late.reference(stream))
    with pytest.raises(ValueError, match="out of order"):
        _deliver_out_of_order(make_app("selfjoin", window=60), stream, "pkg", 150)


def test_word_count_top_k():
    counts = pd.Series([5, 9, 9, 1], index=["d", "b", "a", "c"], name="count")
    assert top_k(counts, 3).index.tolist() == ["a", "b", "d"]
    assert make_app("wordcount", k=2).top(counts).tolist() == [9, 9]


def test_word_count_docstring_example():
    import doctest

    from skewbench.bench.apps import wordcount
    assert doctest.testmod(wordcount).failed == 0


@pytest.mark.parametrize("app_name", sorted(APPS))
def test_outputs_reduced_batch_by_batch_give_the_reference(app_name):
    """The driver's path: the outputs folded one micro-batch at a time (``reduce``), then ``combine``."""
    app, result = run(app_name, "pkg")
    seq = result.outputs["seq"].to_numpy()
    frames = (result.outputs[(seq >= lo) & (seq < lo + BATCH)] for lo in range(0, N, BATCH))
    reduced = app.reduce(frames)
    assert app.same(app.combine(reduced, result.states), reference(app_name))
    if app_name == "wordcount":  # one row per key instead of one per (key, worker, batch)
        assert len(reduced) == stream_for(app_name).distinct_keys < len(result.outputs)


def test_word_count_reports_the_top_k_after_every_batch():
    app, result = run("wordcount", "pkg")
    seq = result.outputs["seq"].to_numpy()
    batches = {lo // BATCH: result.outputs[(seq >= lo) & (seq < lo + BATCH)] for lo in range(0, N, BATCH)}
    top = app.periodic(batches.items())
    assert top.groupby("batch").size().tolist() == [app.k] * len(batches)
    final = top[top.batch == len(batches) - 1].set_index("key")["count"]
    assert final.equals(app.top(reference("wordcount")).rename("count"))
    hottest = top[top["rank"] == 1]["count"].to_numpy()
    assert (np.diff(hottest) >= 0).all() and hottest[0] < hottest[-1]  # running counts grow


def test_word_count_top_k_after_each_batch_is_that_of_the_running_totals_ties_included():
    """The aggregator keeps its totals by fingerprint; its top-k equals that of a Series indexed by word."""
    from skewbench.hashing import fingerprints

    rng, app, running = np.random.default_rng(3), make_app("wordcount", k=5), pd.Series(dtype=np.int64)
    frames = []
    for batch in range(8):
        ids = rng.integers(0, 40, 30)  # few words, small counts: ties at the k-th count
        frames.append((batch, pd.DataFrame({"key": ids.astype(str).astype(object),
                                            "fp": fingerprints(ids).view(np.int64), "count": rng.integers(1, 3, 30)})))
    top = app.periodic(iter(frames))
    for batch, out in frames:
        running = running.add(out.groupby("key")["count"].sum(), fill_value=0).astype(np.int64)
        want, got = top_k(running, 5), top[top["batch"] == batch]
        assert got["key"].tolist() == want.index.tolist() and got["count"].tolist() == want.tolist()


@pytest.mark.parametrize("scheme", ["kg", "pkg", "sg"])
@pytest.mark.parametrize("period", [1, 3])
def test_word_count_aggregation_period(scheme, period):
    """Partial counts sent every ``period`` micro-batches and dropped (the rest after the last message):
    the reference's answer, sent only at a period's end, and fewer counters held than when kept."""
    app = make_app("wordcount", period=period)
    result = run_in_process(app, stream_for("wordcount"), scheme, workers=W, sources=S, batch=BATCH)
    assert app.same(result.answer, reference("wordcount"))
    batches = -(-N // BATCH)
    sent_in = set(result.outputs["seq"] // BATCH)
    assert sent_in <= {b for b in range(batches) if (b + 1) % period == 0} | {batches - 1}
    kept = run("wordcount", scheme)[1]
    assert result.counters < kept.counters
    assert len(result.outputs) >= len(kept.outputs) if period == 1 else len(result.outputs) < len(kept.outputs)
    with pytest.raises(ValueError, match=">= 0"):
        make_app("wordcount", period=-1)
