"""docs/accuracy.md and docs/benchmarks.md are what scripts/bench_docs.py makes from the committed
docs/bench-results.json (the benchmark scripts' own output): no figure on them is typed by hand."""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_docs  # noqa: E402


def test_the_committed_pages_are_what_the_results_make():
    snap = json.loads(bench_docs.SNAPSHOT.read_text(encoding="utf-8"))
    for page, text in bench_docs.pages(snap).items():
        assert page.read_text(encoding="utf-8") == text, f"{page.name}: run `python scripts/bench_docs.py update`"


def test_the_known_defects_on_the_page_are_the_models_list():
    """Issue 35: the model's known defects are one list (data/falls.csv's known rows), and docs/accuracy.md
    shows what benchmarks/known_defects.py printed of it: the same switches, none missing or extra."""
    from shardbudget.calibrate.falls import known

    KNOWN = known()

    snap = json.loads(bench_docs.SNAPSHOT.read_text(encoding="utf-8"))
    (run,) = [r for r in snap["runs"] if r["script"] == "known_defects.py"]
    shown = {tuple(d["key"]) for d in run["tables"]["defects"]}
    assert shown == set(KNOWN), (
        "run `python benchmarks/run_all.py --only known_defects` and `python scripts/bench_docs.py snapshot "
        f"&& python scripts/bench_docs.py update`: {sorted(map(str, shown ^ set(KNOWN)))[:5]}"
    )


def test_every_accuracy_target_is_on_the_page_as_make_bench_prints_it():
    """Each target's figure appears as run_all.py's summary prints it, on both pages."""
    snap = json.loads(bench_docs.SNAPSHOT.read_text(encoding="utf-8"))
    run_all = bench_docs._run_all()
    accuracy = bench_docs.ACCURACY.read_text(encoding="utf-8")
    benchmarks = bench_docs.BENCHMARKS.read_text(encoding="utf-8")
    printed = run_all.summary(snap["runs"])
    for run in snap["runs"]:
        for t in run["targets"]:
            figure = run_all._fmt(t.get("value"), t.get("unit", ""))
            assert figure in printed and f"| {figure} |" in benchmarks, (t["name"], figure)
            if run["script"] in bench_docs.ACCURACY_SCRIPTS:
                assert f"| {figure} |" in accuracy, (t["name"], figure)


def test_a_snapshot_keeps_the_newest_run_of_each_script_and_refuses_a_quick_run(tmp_path):
    def results(name: str, started: str, value: float, quick: bool = False) -> Path:
        path = tmp_path / f"{name}-{started}.json"
        path.write_text(
            json.dumps(
                {
                    "generated": started,
                    "quick": quick,
                    "machine": {"cpus": 2},
                    "runs": [
                        {
                            "script": "accuracy.py",
                            "started": started,
                            "targets": [{"name": "x", "value": value}],
                            "output_tail": ["..."],
                        }
                    ],
                }
            )
        )
        return path

    into = tmp_path / "snap.json"
    snap = bench_docs.snapshot([results("a", "2026-12-02", 2.0), results("b", "2026-12-01", 1.0)], into)
    (run,) = snap["runs"]
    assert run["targets"][0]["value"] == 2.0 and run["machine"] == {"cpus": 2} and "output_tail" not in run
    try:
        bench_docs.snapshot([results("c", "2026-12-03", 3.0, quick=True)], into)
    except SystemExit as stop:
        assert "--quick" in str(stop)
    else:
        raise AssertionError("a --quick run was kept")


def test_the_pages_type_no_accuracy_figure_by_hand():
    """The generator's fixed text holds no percentage: every one on the pages comes from the JSON."""
    source = (ROOT / "scripts" / "bench_docs.py").read_text(encoding="utf-8")
    fixed_text = "\n".join(re.findall(r'"([^"{}]*)"', source))
    assert not re.search(r"\d+(\.\d+)?\s?%", fixed_text), re.findall(r".{20}\d+(?:\.\d+)?\s?%.{0,20}", fixed_text)
