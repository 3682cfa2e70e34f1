"""Seeded generators: determinism, the papers' shapes (Table I p1, DKG skew, Fang's fluctuation)."""

import numpy as np
import pytest

from skewbench.workloads import WorkloadError, available, parse
from skewbench.workloads.synthetic import zipf_exponent_for, zipf_norm
from skewbench.workloads.ticks import grouped_cumsum, ticker

GENERATED = [name for name in available() if name not in ("file", "pageviews")]


@pytest.mark.parametrize("name", GENERATED)
def test_same_seed_same_stream_other_seed_other_stream(name):
    a, b, c = (parse(name, messages=5000, seed=s) for s in (1, 1, 2))
    assert a.messages == 5000 and a.name == name
    np.testing.assert_array_equal(a.fps, b.fps)
    assert not np.array_equal(a.fps, c.fps)
    assert a.summary()["keys"] == a.distinct_keys > 1


@pytest.mark.parametrize("spec,p1_pct", [("lognormal:preset=LN1", 14.71), ("lognormal:preset=LN2", 7.01),
                                         ("wp", 9.32), ("tw", 2.67), ("ct", 3.29)])
def test_table1_stand_ins_have_the_papers_p1(spec, p1_pct):
    assert 100 * parse(spec, messages=400_000, seed=5).p1 == pytest.approx(p1_pct, rel=0.05)


@pytest.mark.parametrize("spec,p1", [("graph:preset=sl1", 0.0328), ("graph:preset=lj", 0.0029)])
def test_graph_presets_match_table1_and_key_sources_by_source_vertex(spec, p1):
    stream = parse(spec, messages=300_000, seed=2)
    assert stream.p1 == pytest.approx(p1, rel=0.1)
    src = stream.split_ids
    assert src is not None and len(src) == stream.messages
    hottest_dst = stream.labels[np.argmax(stream.key_counts)]
    assert np.bincount(src).argmax() != hottest_dst  # endpoints permuted independently


@pytest.mark.parametrize("keys,z", [(10, 0.5), (50_000, 1.0), (2_000_000, 1.1), (123_456, 0.8)])
def test_zipf_norm_matches_the_exact_sum(keys, z):
    exact = np.sum(np.arange(1, keys + 1, dtype=np.float64) ** -z)
    assert zipf_norm(keys, z) == pytest.approx(exact, rel=1e-7)


def test_zipf_exponent_solves_for_p1():
    z = zipf_exponent_for(0.0932, 2_900_000)
    assert 1 / zipf_norm(2_900_000, z) == pytest.approx(0.0932, rel=1e-9)
    with pytest.raises(ValueError, match="p1 must lie"):
        zipf_exponent_for(1e-9, 1000)


def test_zipf_frequencies_follow_the_law():
    stream = parse("zipf:z=1.0,keys=100", messages=1_000_000, seed=3)
    counts = np.sort(stream.key_counts)[::-1]
    expected = 1_000_000 / np.arange(1, 101) / zipf_norm(100, 1.0)
    np.testing.assert_allclose(counts[:10], expected[:10], rtol=0.02)


@pytest.mark.parametrize("skew", [0.0, 0.3, 0.8, 1.0])
def test_country_skew_puts_a_share_r_on_one_of_204_keys(skew):
    stream = parse(f"country:skew={skew}", messages=200_000, seed=1)
    assert stream.n_keys == 204
    hot = stream.key_counts[0] / stream.messages
    assert hot == pytest.approx(skew + (1 - skew) / 204, abs=0.005)


def test_country_half_skew_is_skewed_only_in_its_first_half():
    stream = parse("country:skew=0.8,skewed_part=0.5", messages=200_000, seed=1)
    first, second = stream.ids[:100_000], stream.ids[100_000:]
    assert np.mean(first == 0) > 0.75 and np.mean(second == 0) < 0.02


def _interval_top(stream, intervals):
    return [np.bincount(part, minlength=stream.n_keys).argmax() for part in np.array_split(stream.ids, intervals)]


def test_fluctuating_zipf_changes_frequencies_only_when_f_is_positive():
    still = parse("fzipf:z=1.2,keys=1000,f=0,intervals=10", messages=200_000, seed=4)
    moving = parse("fzipf:z=1.2,keys=1000,f=1,intervals=10", messages=200_000, seed=4)
    assert len(set(_interval_top(still, 10))) == 1
    assert len(set(_interval_top(moving, 10))) >= 5


def test_load_fluctuating_zipf_moves_f_times_the_mean_load_between_intervals():
    """lzipf: between two intervals the instances' loads under consistent hashing change by at least f · L̄,
    as Fang's Sec. 5 defines f (the last swap, of two keys of any rank, may overshoot)."""
    from skewbench.schemes.consistent import lookup, ring

    changes = {}
    for f in (0.5, 2.0):
        stream = parse(f"lzipf:z=0.85,keys=2000,f={f},workers=10,intervals=6", messages=3_000_000, seed=1)
        home = lookup(stream.key_fps, np.empty(0, np.uint64), np.empty(0, np.int64), *ring(10, 100, 0), 0)
        loads = [np.bincount(home[part], minlength=10) / len(part) for part in np.array_split(stream.ids, 6)]
        changes[f] = [np.abs(b - a).sum() for a, b in zip(loads, loads[1:])]
        assert min(changes[f]) >= 0.9 * f / 10, (f, changes[f])  # within sampling noise (~0.003)
    assert np.mean(changes[2.0]) > 2 * np.mean(changes[0.5])
    assert len(set(_interval_top(parse("lzipf:f=0,intervals=5", messages=100_000, seed=1), 5))) == 1


def test_drift_replaces_the_head_but_keeps_the_hottest_key():
    stream = parse("drift:z=1.0,keys=2000,periods=4,head=20,churn=1", messages=400_000, seed=4)
    parts = np.array_split(stream.ids, 4)
    heads = [set(np.argsort(np.bincount(p, minlength=stream.n_keys))[-10:]) for p in parts]
    assert len(heads[0] & heads[1]) <= 2
    assert len({np.bincount(p, minlength=stream.n_keys).argmax() for p in parts}) == 1


def test_documents_carry_a_consistent_label_and_distinguishable_classes():
    stream = parse("docs:classes=3,doc_words=10,vocab=5000,topic_words=50", messages=60_000, seed=2)
    doc, label = stream.payload["doc"], stream.payload["label"]
    assert all(len(set(label[doc == d])) == 1 for d in range(0, doc.max(), 97))
    per_class = [np.bincount(stream.ids[label == c], minlength=stream.n_keys) for c in range(3)]
    top = [set(np.argsort(counts)[-200:]) for counts in per_class]
    assert len(top[0] ^ top[1]) > 40  # the classes' vocabularies differ


def test_ticks_prices_walk_per_symbol():
    stream = parse("ticks:symbols=50", messages=20_000, seed=3)
    price = stream.payload["price"]
    assert (price > 0).all() and len(set(stream.labels)) == len(stream.labels)
    values, groups = np.arange(10.0), np.array([1, 0, 1, 2, 0, 1, 2, 2, 0, 1])
    expected = [sum(values[j] for j in range(i + 1) if groups[j] == groups[i]) for i in range(10)]
    np.testing.assert_allclose(grouped_cumsum(values, groups), expected)
    assert ticker(0) == "BAA" and ticker(1) == "BAB" and len({ticker(i) for i in range(10_000)}) == 10_000


def test_word_stream_samples_wordfreq_by_frequency():
    stream = parse("wordfreq:lang=en", messages=200_000, seed=1)
    assert stream.labels[np.argmax(stream.key_counts)] == "the"
    assert 100 * stream.p1 == pytest.approx(5.44, rel=0.05)


@pytest.mark.parametrize("spec,message", [
    ("nope", "unknown workload 'nope'; known workloads:"),
    ("zipf:z=banana", "zipf: parameter z must be a number in 0..100, got 'banana'"),
    ("zipf:keys=1.5", "zipf: parameter keys must be an integer in 1..100,000,000, got '1.5'"),
    ("zipf:zz=1", "zipf: unknown parameter 'zz'; its parameters: z, keys, p1, rate"),
    ("zipf:z", "bad workload SPEC"),
    ("zipf:keys=0", "zipf: parameter keys must be an integer in 1.."),
    ("zipf:z=nan", "zipf: parameter z must be a number in 0..100, got 'nan'"),
    ("lognormal:preset=LN3", "unknown preset 'LN3'"),
    ("country:skew=80", "country: parameter skew must be a number in 0..1, got '80'"),
    ("wordfreq:lang=xx", "no 'large' list for lang='xx'"),
    ("wp:keys=5", "wp: unknown parameter 'keys'; its parameters: none"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(WorkloadError) as err:
        parse(spec, messages=100)
    assert message in str(err.value)


def test_messages_must_be_positive():
    with pytest.raises(WorkloadError, match="zipf: messages must be an integer in 1.."):
        parse("zipf", messages=0)
