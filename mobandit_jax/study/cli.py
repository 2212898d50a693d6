"""``mobandit study new|ask|tell|fail|add|enqueue|recommend|status|history``: :class:`~mobandit_jax.study.Study` on
the command line. Every command opens the study (its folder's ``study.db``, or a ``postgresql://`` address), does one
thing and exits; a bad input prints one line and exits 2, writing nothing."""
from __future__ import annotations

import json
import sys

from .errors import StudyError


def add_parser(parser):
    """Add the ``study`` subcommands to the ``study`` subparser of ``mobandit``.

    Args:
      parser: the ``study`` subparser (an :class:`argparse.ArgumentParser`).

    Returns:
      None; each subcommand runs :func:`main`.
    """
    sub = parser.add_subparsers(dest="study_cmd", required=True,
                                metavar="{new,ask,tell,fail,add,enqueue,recommend,status,history,plot,dashboard}")
    p = sub.add_parser("new", help="create a study from a spec")
    p.add_argument("spec", help="the study's TOML spec")
    p.add_argument("dir", help="its folder (study.db) or a postgresql:// address")
    p.add_argument("--seed", type=int, default=0, help="the policy's seed (default 0)")
    p = sub.add_parser("ask", help="the next tickets, one JSON object a line")
    p.add_argument("dir")
    p.add_argument("-n", type=int, default=1, help="how many (default 1)")
    p.add_argument("--worker", help="the asking worker (its unanswered tickets come back first)")
    p = sub.add_parser("tell", help="tell a ticket's values")
    p.add_argument("dir")
    p.add_argument("ticket")
    p.add_argument("--values", required=True, help="one number per objective, comma separated (a slate: rows "
                   "separated by ';')")
    p.add_argument("--cost", help="what the evaluation cost, in the budget's units (required with a budget); "
                   "'expected' charges the arm's expected cost")
    p.add_argument("--attrs", help="the ticket's attributes, a JSON object (e.g. '{\"gpu\": \"h100\"}')")
    p = sub.add_parser("add", help="add finished evaluations made elsewhere: one (ARM --values) or a CSV's rows")
    p.add_argument("dir")
    p.add_argument("arm", nargs="?", help="the arm's name (or give --csv)")
    p.add_argument("--values", help="one number per objective, comma separated")
    p.add_argument("--cost", help="what it cost (required with a budget); 'expected' charges the arm's expected cost")
    p.add_argument("--attrs", help="its attributes, a JSON object")
    p.add_argument("--csv", metavar="FILE", help="a CSV: a column with the arm's name, one per objective, optionally "
                   "the cost; other columns go into each ticket's attributes (all rows are added, or none)")
    p.add_argument("--arm-column", default="arm", help="the CSV's column of arm names (default arm)")
    p.add_argument("--cost-column", default="cost", help="the CSV's column of costs (default cost; optional)")
    p = sub.add_parser("enqueue", help="have an arm evaluated before the policy chooses (the next ask hands it out)")
    p.add_argument("dir")
    p.add_argument("arm")
    p = sub.add_parser("fail", help="mark a ticket failed (its arm may be asked again)")
    p.add_argument("dir")
    p.add_argument("ticket")
    p.add_argument("--abandon", action="store_true", help="abandon it: never asked again, never counted")
    p = sub.add_parser("recommend", help="the recommended arms, one a line")
    p.add_argument("dir")
    p.add_argument("--table", action="store_true", help="print every arm's pulls, means, 95%% intervals, cost, "
                   "whether recommended and its state (study.arms())")
    sub.add_parser("status", help="the study's status as JSON").add_argument("dir")
    p = sub.add_parser("history", help="one row per ticket, as CSV")
    p.add_argument("dir")
    p.add_argument("--csv", metavar="FILE", help="write it to FILE (default: stdout)")
    add_view_parsers(sub)
    parser.set_defaults(fn=main)


def _values(text: str):
    try:
        rows = [[float(v) for v in row.split(",")] for row in text.split(";")]
    except ValueError:
        raise StudyError(f"--values {text!r} must be numbers separated by ',' (a slate's rows by ';')") from None
    return rows[0] if len(rows) == 1 else rows


def _attrs(text):
    """``--attrs``: a JSON object, or None."""
    if text is None:
        return None
    try:
        attrs = json.loads(text)
    except ValueError as err:
        raise StudyError(f"--attrs {text!r} is not JSON ({err}); give an object such as '{{\"gpu\": \"h100\"}}'") \
            from None
    if not isinstance(attrs, dict):
        raise StudyError(f"--attrs {text!r} must be a JSON object (name: value pairs in braces)")
    return attrs


def _cost(text, study, what):
    """``--cost``: a number, or ``expected`` (None: the arm's expected cost); required in a budgeted study."""
    if text is None:
        if study.spec.budget is not None:
            raise StudyError(f"{what}: give --cost, what the evaluation cost in the budget's units (this "
                             "study has a budget; --cost expected charges the arm's expected cost)")
        return None
    if text == "expected":
        return None
    try:
        return float(text)
    except ValueError:
        raise StudyError(f"--cost {text!r} must be a number or 'expected'") from None


def main(args) -> int:
    """Run one ``mobandit study`` command.

    Args:
      args: the parsed command line (``study_cmd`` and the subcommand's options).

    Returns:
      The exit code: 0, or 2 after a :class:`StudyError`, printed as one line on stderr.
    """
    try:
        return _run(args)
    except StudyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args) -> int:
    from .study import Study

    cmd = args.study_cmd
    if cmd == "new":
        study = Study.create(args.dir, args.spec, seed=args.seed)
        if study.existed:
            print(f"opened the existing study at {args.dir} (the same spec and seed): {study.status()['told']} told, "
                  f"policy {study.built.name}, seed {study.seed}")
        else:
            print(f"study at {args.dir}: {len(study.spec.arms)} arms, objectives {study.spec.objectives}, policy "
                  f"{study.built.name}, seed {study.seed}")
        for note in study.built.notes:
            print(f"warning: {note}", file=sys.stderr)
        return 0
    if cmd in VIEWS:
        return run_view(args)
    study = Study.load(args.dir)
    if cmd == "ask":
        for t in study.ask(args.n, worker=args.worker):
            print(json.dumps(t._asdict()))
        if sys.stderr.isatty():
            reason = study.status()["reason"]
            if reason:
                print(f"({reason})", file=sys.stderr)
    elif cmd == "tell":
        values = _values(args.values)
        study.ticket(args.ticket)  # an unknown ticket is named before a missing cost
        study.tell(args.ticket, values, _cost(args.cost, study, f"ticket {args.ticket}"), attrs=_attrs(args.attrs))
    elif cmd == "add":
        _add(study, args)
    elif cmd == "enqueue":
        print(json.dumps({"id": study.enqueue(args.arm), "arm": args.arm}))
    elif cmd == "fail":
        study.fail(args.ticket, retry=not args.abandon)
    elif cmd == "recommend":
        if args.table:
            print(study.arms().to_string(index=False))
        else:
            for name in study.recommend():
                print(name)
        unseen = study.status()["unevaluated"]
        if unseen:
            print(f"warning: recommended but never evaluated (the method's rule recommends them unseen): "
                  f"{', '.join(unseen)}", file=sys.stderr)
    elif cmd == "status":
        print(json.dumps(study.status()))
    elif cmd == "history":
        frame = study.history()
        if args.csv:
            frame.to_csv(args.csv, index=False)
        else:
            frame.to_csv(sys.stdout, index=False)
    return 0


def _add(study, args):
    """``mobandit study add``: one evaluation (ARM --values) or a CSV's; prints the new tickets' ids, one a line."""
    if (args.csv is None) == (args.arm is None):
        raise StudyError("study add: give an ARM with --values, or --csv FILE (not both)")
    if args.csv is not None:
        if args.values or args.cost or args.attrs:
            raise StudyError("study add --csv: the values, costs and attributes come from the file's columns; drop "
                             "--values, --cost and --attrs")
        ids = study.add_csv(args.csv, arm_column=args.arm_column, cost_column=args.cost_column)
    else:
        if args.values is None:
            raise StudyError(f"study add {args.arm}: give --values, one number per objective {study.spec.objectives}")
        ids = [study.add(args.arm, _values(args.values), _cost(args.cost, study, f"arm {args.arm!r}"),
                         attrs=_attrs(args.attrs))]
    for tid in ids:
        print(tid)


# ------------------------------------------------------------------ views: the figure and the dashboard (read only)

VIEWS = ("plot", "dashboard")


def add_view_parsers(sub):
    """Add ``mobandit study plot DIR --out FILE`` and ``mobandit study dashboard DIR [--port N] [--host H]``.

    Args:
      sub: the ``study`` subcommands (what ``add_subparsers`` returned).

    Returns:
      None.
    """
    p = sub.add_parser("plot", help="write the study's figure (PNG, PDF or SVG by the file's suffix)")
    p.add_argument("dir", help="the study's folder or postgresql:// address")
    p.add_argument("--out", required=True, metavar="FILE", help="the figure's file: .png (200 dpi), .pdf or .svg")
    p = sub.add_parser("dashboard", help="serve a live, read-only web page of the study")
    p.add_argument("dir", help="the study's folder or postgresql:// address")
    p.add_argument("--port", type=int, default=8080, help="the port (default 8080; 0: any free one)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine "
                   "only; 0.0.0.0: every network, read-only but without a password)")


def run_view(args) -> int:
    """Write the figure, or serve the dashboard until Ctrl-C (one line on stdout: its address).

    Args:
      args: the parsed ``plot`` or ``dashboard`` command line.

    Returns:
      The exit code, 0 (a bad input raises :class:`StudyError`, which :func:`main` reports).
    """
    from . import plot
    from .study import Study

    if args.study_cmd == "plot":
        out = plot.figure_path(args.out)
        study = Study.load(args.dir)
        print(plot.save(plot.plot(study), out))
        return 0
    from . import dashboard

    if not 0 <= args.port <= 65535:
        raise StudyError(f"--port {args.port} must be between 0 and 65535")
    study = Study.load(args.dir)
    try:
        server = dashboard.serve(study, args.host, args.port)
    except OSError as err:
        raise StudyError(f"cannot listen on {args.host}:{args.port} ({err.strerror or err}); give another --port "
                         "or --host") from None
    host, port = server.server_address[:2]
    print(f"dashboard of {args.dir} at http://{host}:{port}/ (read-only; Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        study.close()
    return 0
