"""skewbench.spark without Spark: what a Balancer refuses, its configuration beside the checkpoint, the
routers that replay a micro-batch exactly, and the merge of the partials.  (The job itself runs on a
cluster in tests/spark/test_api.py.)"""
import operator

import numpy as np
import pandas as pd
import pytest

from skewbench.hashing import fingerprint, fingerprints
from skewbench.scheme import make_scheme
from skewbench.spark import Balancer, BalancerError, merged, balancer_schemes
from skewbench.spark.routers import KEEP, SourceRouters, key_fingerprints


def balancer(tmp_path, **kw):
    return Balancer("word", **({"scheme": "pkg", "workers": 4, "merge": operator.add,
                                "checkpoint": tmp_path / "ck"} | kw))


@pytest.mark.parametrize("kw, says", [
    ({"scheme": "nope"}, "unknown scheme 'nope'"),
    ({"scheme": "mixed"}, "plans a routing table from the keys' counts: give sample=keys"),
    ({"scheme": "off-greedy"}, "plans a routing table from the keys' counts: give sample=keys"),
    ({"scheme": "pkg-global"}, "needs every worker's true load at every source"),
    ({"scheme": "pkg", "merge": None}, "give merge=f"),
    ({"workers": 0}, "workers must be a whole number >= 1"),
    ({"params": "oops"}, "NAME=VALUE"),
    ({"params": "d=3"}, "does not take the parameters 'd=3'"),
    ({"checkpoint": "hdfs://nn/ck"}, "a local or mounted path"),
])
def test_what_cannot_run_is_refused_with_what_to_change(tmp_path, kw, says):
    with pytest.raises(BalancerError) as error:
        balancer(tmp_path, **kw)
    assert says in str(error.value)


def test_a_scheme_that_keeps_keys_whole_needs_no_merge_and_splitting_ones_say_how_far(tmp_path):
    assert balancer(tmp_path, scheme="kg", merge=None).replication == 1
    assert balancer(tmp_path, scheme="pkg").replication == 2
    assert balancer(tmp_path, scheme="wchoices", workers=8).replication == 8
    assert "pkg-global" not in balancer_schemes() and {"pkg", "wchoices", "kg", "mixed"} <= set(balancer_schemes())


def test_a_restart_with_another_scheme_or_w_is_refused_and_the_same_one_goes_on(tmp_path):
    first = balancer(tmp_path)
    first._persist()
    balancer(tmp_path)  # the same configuration: fine
    with pytest.raises(BalancerError) as error:
        balancer(tmp_path, scheme="dchoices", workers=6)
    message = str(error.value)
    assert "scheme 'pkg' -> 'dchoices'" in message and "workers 4 -> 6" in message and "new checkpoint" in message


@pytest.mark.parametrize("scheme", ["mixed", "gedik-readj", "off-greedy"])
def test_a_scheme_that_plans_a_table_plans_it_on_the_sample_and_a_restart_keeps_it(tmp_path, scheme):
    sample, later = hot_stream(seed=1), hot_stream(seed=2)
    first = balancer(tmp_path, scheme=scheme, merge=None, sample=sample)
    assert first.replication == 1  # a table keeps each key on one worker: no merge needed
    routes = SourceRouters(first._proto, None).start(0, 0).route_many(key_fingerprints(later))
    hashed = make_scheme("kg", workers=4).route_many(key_fingerprints(later))
    assert first._proto.table_size() > 0  # the busiest worker: about hot's 30 % alone, where hashing piles on more
    assert np.bincount(routes, minlength=4).max() < 0.4 * len(later) < np.bincount(hashed, minlength=4).max()
    first._persist()
    again = balancer(tmp_path, scheme=scheme, merge=None, sample=later[:50])  # another sample: the saved table
    assert np.array_equal(SourceRouters(again._proto, None).start(0, 3).route_many(key_fingerprints(later)), routes)


def hot_stream(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.3, "hot", rng.integers(0, 200, n).astype(str)).astype(object)


@pytest.mark.parametrize("scheme", ["pkg", "dchoices", "potc"])
def test_routers_carried_across_batches_route_as_one_router_and_a_rerun_routes_alike(tmp_path, scheme):
    keys, proto = hot_stream(), make_scheme(scheme, workers=5)
    routers = SourceRouters(proto, tmp_path / "routers")
    pieces = np.array_split(keys, 6)
    routed = []
    for batch, piece in enumerate(pieces):
        router = routers.start(source=0, batch=batch)
        routed.append(router.route_many(key_fingerprints(piece)))
        routers.keep(0, batch, router)
    whole = make_scheme(scheme, workers=5).route_many(fingerprints(keys))
    assert np.array_equal(np.concatenate(routed), whole)  # the simulator's single router, exactly
    rerun = routers.start(source=0, batch=5).route_many(key_fingerprints(pieces[5]))
    assert np.array_equal(rerun, routed[5])
    assert len(list((tmp_path / "routers").glob("source-0-*.pickle"))) == KEEP
    assert not routers.start(source=1, batch=5).route_many(key_fingerprints(pieces[0])).size == 0  # a fresh one


def test_key_fingerprints_of_strings_ints_and_nulls():
    assert key_fingerprints(np.array(["a", None], dtype=object)).tolist() == [fingerprint("a"), 0]
    assert key_fingerprints(np.array([7, 9])).tolist() == fingerprints(np.array([7, 9])).tolist()
    assert key_fingerprints(np.array([7.0, np.nan])).tolist() == [fingerprint(7), 0]  # a long column with nulls


def write_partials(output, batch, rows):
    folder = output / "partials" / f"batch={batch}"
    folder.mkdir(parents=True)
    pd.DataFrame(rows, columns=["word", "skewbench_worker", "value"]).to_parquet(folder / "part-0.parquet")


def test_results_merge_each_workers_newest_partial(tmp_path):
    write_partials(tmp_path, 0, [("a", 0, 5), ("a", 1, 2), ("b", 1, 1)])
    write_partials(tmp_path, 1, [("a", 0, 9), ("c", 3, 4)])  # a's worker 0 again: its newest partial counts
    counts = merged(tmp_path, "word", operator.add)
    assert counts.to_dict() == {"a": 11, "b": 1, "c": 4}
    assert merged(tmp_path, "word", max).to_dict() == {"a": 9, "b": 1, "c": 4}
    with pytest.raises(BalancerError, match="no partial results"):
        merged(tmp_path / "nothing", "word")


def test_docstring_examples():
    import doctest

    from skewbench.spark import balancer as balancer_module, routers

    for module in (routers, balancer_module):
        failed, attempted = doctest.testmod(module)
        assert failed == 0 and attempted > 0
