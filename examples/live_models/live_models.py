"""Choose among scikit-learn model configurations with a live, budgeted Pareto set identification study.

Each evaluation fits one configuration on one random train/test split of the digits data set (shipped with
scikit-learn, so it runs offline) and tells the study two objectives, the test accuracy and a normalised prediction
speed ``1 / (1 + milliseconds per 100 test images)`` (the fastest of three predictions), and its cost, the measured
fit time in seconds. The study runs PSI-SR (Kone et al., 2024: empirical gap elimination by successive rejects)
under a budget of fit seconds, with two evaluations at a time (``Study.optimize(workers=2)``). The expected costs
come from one profiling fit of each configuration (the ``fit_s`` column), as the cost-aware paper profiles its
configurations; the budget is ``rho`` times their sum. At the end it prints the recommended set beside the set found
by evaluating every configuration many times.

    python examples/live_models/live_models.py [--size tiny|full] [--out DIR] [--workers 2] [--seed 0]
"""
from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time

import numpy as np

import mobandit_jax as mb

# (name, model family, hyperparameters): a few families, several settings each
CONFIGS = [
    ("logreg_C0.01", "logreg", {"C": 0.01}), ("logreg_C0.1", "logreg", {"C": 0.1}),
    ("logreg_C1", "logreg", {"C": 1.0}), ("logreg_C10", "logreg", {"C": 10.0}),
    ("knn_1", "knn", {"n_neighbors": 1}), ("knn_5", "knn", {"n_neighbors": 5}),
    ("knn_25", "knn", {"n_neighbors": 25}),
    ("tree_d4", "tree", {"max_depth": 4}), ("tree_d8", "tree", {"max_depth": 8}),
    ("tree_full", "tree", {"max_depth": 0}),
    ("forest_10", "forest", {"n_estimators": 10}), ("forest_50", "forest", {"n_estimators": 50}),
    ("forest_150", "forest", {"n_estimators": 150}),
    ("svm_rbf_C1", "svm", {"C": 1.0}), ("svm_rbf_C10", "svm", {"C": 10.0}),
    ("nb_gauss", "nb", {"var_smoothing": 1e-9}), ("nb_gauss_smooth", "nb", {"var_smoothing": 1e-2}),
    ("mlp_16", "mlp", {"hidden": 16}), ("mlp_64", "mlp", {"hidden": 64}),
    ("ridge", "ridge", {"alpha": 1.0}),
]
TINY = ["knn_5", "knn_25", "tree_d4", "tree_d8", "nb_gauss", "ridge"]
SIZES = {"tiny": dict(names=TINY, rho=4.0, reps=2), "full": dict(names=[c[0] for c in CONFIGS], rho=20.0, reps=12)}


def make_model(family: str, params: dict, seed: int):
    """The scikit-learn estimator of a configuration."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    if family == "logreg":
        return LogisticRegression(C=params["C"], max_iter=300)
    if family == "knn":
        return KNeighborsClassifier(n_neighbors=int(params["n_neighbors"]))
    if family == "tree":
        return DecisionTreeClassifier(max_depth=int(params["max_depth"]) or None, random_state=seed)
    if family == "forest":
        return RandomForestClassifier(n_estimators=int(params["n_estimators"]), random_state=seed)
    if family == "svm":
        return SVC(C=params["C"])
    if family == "nb":
        return GaussianNB(var_smoothing=params["var_smoothing"])
    if family == "mlp":
        return MLPClassifier(hidden_layer_sizes=(int(params["hidden"]),), max_iter=200, random_state=seed)
    return RidgeClassifier(alpha=params["alpha"])


def evaluate_once(family: str, params: dict, seed: int):
    """``([accuracy, speed], fit seconds)`` of one fit on one random split (``seed``)."""
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.3, random_state=seed)
    model = make_model(family, params, seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the small MLPs and regularised models
        model.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    seconds = []
    for _ in range(3):  # the fastest of three predictions: little of another thread's or process's load in it
        start = time.perf_counter()
        predicted = model.predict(X_test)
        seconds.append(time.perf_counter() - start)
    accuracy = float(np.mean(predicted == y_test))
    ms_per_100 = min(seconds) * 1e3 * 100 / len(y_test)
    return [accuracy, 1.0 / (1.0 + ms_per_100)], fit_s


def write_arms(path: str, names: list, seed: int) -> None:
    """The arms CSV: name, family, hyperparameters (as JSON) and ``fit_s``, one profiling fit's seconds."""
    import json

    by_name = {c[0]: c for c in CONFIGS}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "family", "params", "fit_s"])
        for name in names:
            _, family, params = by_name[name]
            _, fit_s = evaluate_once(family, params, seed=10_000 + seed)
            w.writerow([name, family, json.dumps(params), f"{max(fit_s, 1e-4):.6f}"])


def run(size: str = "tiny", out: str | None = None, workers: int = 2, seed: int = 0, progress: bool = True) -> dict:
    """Run the example; return the recommended and exhaustive sets, the budget and what was spent."""
    import json

    cfg = SIZES[size]
    out = out or tempfile.mkdtemp(prefix="live_models-")
    os.makedirs(out, exist_ok=True)
    arms_csv = os.path.join(out, "arms.csv")
    write_arms(arms_csv, cfg["names"], seed)
    with open(arms_csv) as f:
        profile = sum(float(r["fit_s"]) for r in csv.DictReader(f))
    spec = {"study": {"arms": arms_csv, "objectives": ["accuracy", "speed"], "lower": [0.0, 0.0],
                      "upper": [1.0, 1.0]},
            "budget": {"B": cfg["rho"] * profile, "cost": "fit_s"},
            "policies": [{"name": "psi_sr"}]}
    study = mb.Study.create(os.path.join(out, "study"), spec, seed=seed)
    calls = iter(range(10 ** 9))

    def evaluate(ticket):
        return evaluate_once(ticket.config["family"], json.loads(ticket.config["params"]), seed=next(calls))

    errors = study.optimize(evaluate, workers=workers, progress=progress)
    means = []
    for name in cfg["names"]:  # the exhaustive answer: every configuration on many splits
        family, params = next((c[1], c[2]) for c in CONFIGS if c[0] == name)
        means.append(np.mean([evaluate_once(family, params, seed=20_000 + r)[0] for r in range(cfg["reps"])], 0))
    front = np.asarray(mb.pareto_front_mask(np.asarray(means, np.float32)))
    status = study.status()
    return dict(recommended=study.recommend(), exhaustive=[n for n, f in zip(cfg["names"], front, strict=True) if f],
                budget=status["budget"], spent=status["spent"], told=status["told"], errors=len(errors),
                folder=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", help="the study's folder (default: a new temporary folder)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    res = run(args.size, args.out, args.workers, args.seed)
    print(f"recommended ({res['told']} evaluations, {res['spent']:.2f} of {res['budget']:.2f} fit seconds): "
          f"{res['recommended']}")
    print(f"exhaustive ({SIZES[args.size]['reps']} splits of every configuration): {res['exhaustive']}")


if __name__ == "__main__":
    main()
