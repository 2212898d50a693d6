"""``mobandit study ...``: a round trip through every command, exit codes, one-line errors."""
import json

from mobandit_jax.cli import main

SPEC = """
[study]
arms = "arms.csv"
objectives = ["acc", "speed"]
lower = [0.0, 0.0]
upper = [1.0, 10.0]
[budget]
B = 3.0
cost = "fit_s"
[[policies]]
name = "cohv_ucb"
"""


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_round_trip(tmp_path, capsys):
    (tmp_path / "arms.csv").write_text("arm,depth,fit_s\ntree3,3,1.0\ntree5,5,1.0\nlinear,0,0.5\n")
    (tmp_path / "spec.toml").write_text(SPEC)
    d = str(tmp_path / "study")
    assert _run(capsys, "study", "new", str(tmp_path / "spec.toml"), d, "--seed", "4")[0] == 0
    code, out, _ = _run(capsys, "study", "ask", d, "-n", "2", "--worker", "w1")
    tickets = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(tickets) == 2 and len({t["arm"] for t in tickets}) == 2
    assert tickets[0]["config"] == {"depth": 3, "fit_s": 1.0} and tickets[0]["slate"] is None
    first, second = tickets
    assert _run(capsys, "study", "tell", d, first["id"], "--values", "0.8,4", "--cost", "1.0")[0] == 0
    bads = (["--values", "0.8"], ["--values", "0.8,11"], ["--values", "x,1"], ["--values", "0.8,4", "--cost", "-1"])
    for bad in bads:
        code, out, err = _run(capsys, "study", "tell", d, second["id"], *bad)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and out == ""
    code, _, err = _run(capsys, "study", "tell", d, "t77", "--values", "0.1,1")
    assert code == 2 and "unknown ticket" in err
    assert _run(capsys, "study", "fail", d, second["id"], "--abandon")[0] == 0
    code, _, err = _run(capsys, "study", "fail", d, second["id"])
    assert code == 2 and "not pending" in err
    status = json.loads(_run(capsys, "study", "status", d)[1])
    assert status == {"told": 1, "pending": 0, "queued": 0, "failed": 1, "spent": 1.0, "budget": 3.0, "finished": False,
                      "reason": None, "ended_by": None, "budget_note": "spent 1 of 3 (33.3%); running",
                      "unevaluated": []}
    code, out, _ = _run(capsys, "study", "recommend", d)
    assert code == 0 and out.split() == [first["arm"]]
    code, out, _ = _run(capsys, "study", "recommend", d, "--table")
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["arm", "pulls", "acc", "acc_low", "acc_high", "speed", "speed_low",
                                            "speed_high", "cost", "recommended", "state"]
    told = {r.split()[0]: r.split() for r in rows}
    assert len(rows) == 3 and told[first["arm"]][1:3] == ["1", "0.8"] and told[first["arm"]][-2:] == ["True", "active"]
    assert [r.split()[-1] for r in rows].count("unevaluated") == 2
    assert _run(capsys, "study", "history", d, "--csv", str(tmp_path / "h.csv"))[0] == 0
    lines = (tmp_path / "h.csv").read_text().splitlines()
    assert lines[0] == "ticket,state,worker,arm,acc,speed,cost,asked,told,source" and len(lines) == 3
    code, _, err = _run(capsys, "study", "new", str(tmp_path / "spec.toml"), d, "--seed", "5")
    assert code == 2 and "another study" in err
    code, _, err = _run(capsys, "study", "ask", str(tmp_path / "nothing"))
    assert code == 2 and "no study" in err
