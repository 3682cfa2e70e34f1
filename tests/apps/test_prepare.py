"""Every app reads any keyed stream: a self-join gets synthetic prices, Naive Bayes synthetic documents,
and the answer under routing still equals the single-process reference."""
import numpy as np
import pytest

from skewbench.bench.apps import make_app
from skewbench.bench.apps.local import run_in_process
from skewbench.workloads import parse

ZIPF = "zipf:z=1.2,keys=300"


@pytest.mark.parametrize("app_name", ["selfjoin", "naivebayes"])
@pytest.mark.parametrize("scheme", ["kg", "pkg", "sg"])
def test_plain_keyed_stream_gives_the_reference_answer(app_name, scheme):
    app = make_app(app_name)
    stream = parse(ZIPF, messages=3000, seed=1)
    with pytest.raises(ValueError, match="needs payload"):
        app.check(stream)
    prepared = app.prepare(stream)
    app.check(prepared)
    assert np.array_equal(prepared.ids, stream.ids)  # keys and order untouched
    result = run_in_process(app, stream, scheme, workers=4, sources=2, batch=700)
    assert app.same(result.answer, app.reference(prepared))


def test_prepare_is_deterministic_and_keeps_a_stream_that_has_the_payload():
    join, bayes = make_app("selfjoin"), make_app("naivebayes")
    stream = parse(ZIPF, messages=500, seed=2)
    assert np.array_equal(join.prepare(stream).payload["price"], join.prepare(stream).payload["price"])
    ticks, docs = parse("ticks:symbols=50", messages=500), parse("docs:classes=4", messages=500)
    assert join.prepare(ticks) is ticks and bayes.prepare(docs) is docs
    made = bayes.prepare(stream).payload
    assert (np.diff(made["doc"]) >= 0).all() and set(np.unique(made["label"])) <= {0, 1, 2, 3}
    assert len(make_app("naivebayes").reference(bayes.prepare(stream)).query_seq) > 0  # queries exist
