"""Splitting a stream to sources and building each source's router (skewbench.sources)."""
import numpy as np
import pytest

from skewbench.scheme import make_scheme
from skewbench.sources import prepare_scheme, source_of_each_message, source_routers
from skewbench.stream import Stream

STREAM = Stream("zipf", np.random.default_rng(1).zipf(1.4, 5000) % 300, split_ids=np.arange(5000) % 7)


def test_shuffle_deals_round_robin_and_key_hashes_the_split_key():
    assert source_of_each_message(STREAM, 3, "shuffle", 4, 9).tolist() == [1, 2, 0, 1, 2]
    piece = STREAM.slice(4, 9)  # a piece is dealt as the whole stream deals it
    assert source_of_each_message(piece, 3, "shuffle", first=4).tolist() == [1, 2, 0, 1, 2]
    assert np.array_equal(source_of_each_message(piece, 3, "key", first=4),
                          source_of_each_message(STREAM, 3, "key", 4, 9))
    by_key = source_of_each_message(STREAM, 3, "key")
    assert by_key.min() >= 0 and by_key.max() < 3
    assert np.array_equal(by_key, by_key[np.arange(5000) % 7])  # one source per split id
    assert np.array_equal(source_of_each_message(STREAM, 3, "key", 100, 200), by_key[100:200])
    with pytest.raises(ValueError, match="unknown source split 'hash'; use one of shuffle, key"):
        source_of_each_message(STREAM, 3, "hash")


def test_local_schemes_spawn_a_router_per_source_and_global_ones_share_one():
    proto = make_scheme("pkg", 5)
    routers = source_routers(proto, 3)
    assert routers[0] is proto and len({id(r) for r in routers}) == 3
    shared = make_scheme("pkg-global", 5)
    assert source_routers(shared, 3) == [shared]
    synced = source_routers(shared, 3, distributed=True)  # sources in separate processes: copies, kept in step
    assert synced[0] is shared and len({id(r) for r in synced}) == 3


def test_distributed_sources_get_copies_of_a_planned_table():
    proto = prepare_scheme("llfd", 5, STREAM, seed=2)
    assert proto.table_size() > 0  # the copies below carry a plan
    copies = source_routers(proto, 3, distributed=True)
    assert len({id(r) for r in copies + [proto]}) == 4
    expected = proto.route_many(STREAM.fps, STREAM.clock)
    for router in copies:
        np.testing.assert_array_equal(router.route_many(STREAM.fps, STREAM.clock), expected)


def test_prepare_fits_offline_schemes_on_the_whole_stream():
    fitted = prepare_scheme("off-greedy", 5, STREAM)
    assert fitted.table_size() == STREAM.distinct_keys
    np.testing.assert_array_equal(np.bincount(fitted.route_many(STREAM.fps), minlength=5), fitted.fitted_loads)
