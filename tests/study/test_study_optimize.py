"""Study.optimize on any executor: a process pool and a Dask cluster finish a study with the recommendation of the
serial loop told the same values (the Pareto set of the table, by brute force); ``timeout`` returns within one
evaluation's time and leaves nothing pending; bad arguments are one line."""
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import mobandit_jax as mb

TABLE = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.2, 0.2], [0.6, 0.3], [0.7, 0.6], [0.3, 0.8]])


def evaluate(ticket):
    """The table's row of the ticket's arm (module level: a process pool pickles it by name)."""
    return TABLE[ticket.index].tolist()


def slow(ticket):
    time.sleep(0.4)
    return TABLE[ticket.index].tolist()


def _spec(horizon=24):
    return {"study": {"arms": [f"m{i}" for i in range(len(TABLE))], "objectives": ["acc", "speed"],
                      "horizon": horizon},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


def _pareto_names():
    """Brute force: the arms no other arm dominates."""
    keep = [i for i, a in enumerate(TABLE)
            if not any(np.all(b >= a) and np.any(b > a) for j, b in enumerate(TABLE) if j != i)]
    return [f"m{i}" for i in keep]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    study = mb.Study.create(tmp_path_factory.mktemp("serial") / "s", _spec(), seed=0)
    while batch := study.ask():
        study.tell(batch[0], evaluate(batch[0]))
    assert study.status()["finished"] and study.recommend() == _pareto_names()
    return study.recommend()


def _finished_the_same(study, serial, errors):
    assert errors == []
    status = study.status()
    assert status["finished"] and status["told"] == 24 and status["pending"] == 0
    assert study.recommend() == serial


def test_process_pool(tmp_path, serial):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = study.optimize(evaluate, executor=pool, progress=False)
    _finished_the_same(study, serial, errors)
    assert study.history()["worker"].str.startswith("optimize-").all()


def test_thread_pool_by_workers(tmp_path, serial):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    _finished_the_same(study, serial, study.optimize(evaluate, workers=3, progress=False))


def test_dask_cluster(tmp_path, serial):
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                                            "(pip install 'mobandit_jax[dask]')")
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        errors = study.optimize(evaluate, executor=client.get_executor(), workers=2, progress=False)
    _finished_the_same(study, serial, errors)


def test_timeout_returns_within_one_evaluation(tmp_path):
    study = mb.Study.create(tmp_path / "s", _spec(horizon=1000), seed=0)
    assert study.optimize(evaluate, max_evals=2, progress=False) == []  # compiled before the clock starts
    start = time.monotonic()
    errors = study.optimize(slow, workers=2, timeout=1.0, progress=False)
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 1.0 + 0.4
    status = study.status()
    assert status["pending"] == 0 and 2 + 1 <= status["told"] <= 2 + 6  # two at a time, 0.4 s each, for 1 s
    assert len(errors) == 2 == status["failed"] and all(isinstance(e, TimeoutError) for _, e in errors)
    assert all(t.id in set(study.history().query("state == 'failed'")["ticket"]) for t, _ in errors)
    again = study.optimize(evaluate, max_evals=3, progress=False)  # failed tickets' arms are asked again
    assert again == [] and study.status()["told"] == status["told"] + 3


@pytest.mark.parametrize("kwargs, key", [({"timeout": 0}, "timeout"), ({"timeout": float("nan")}, "timeout"),
                                         ({"workers": 0}, "workers"), ({"max_evals": -1}, "max_evals")])
def test_bad_arguments_are_one_line(tmp_path, kwargs, key):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    with pytest.raises(mb.StudyError, match=f"^{key} = ") as err:
        study.optimize(evaluate, progress=False, **kwargs)
    assert "\n" not in str(err.value) and study.status()["told"] == 0
