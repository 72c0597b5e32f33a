"""trend_of: which runs a trend follows, and the figures it derives."""
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.output.trend import sparkline, trend_of


def summary(total, stale, expired):
    return {"total": total, "fresh": total - stale - expired, "aging": 0, "stale": stale,
            "expired": expired, "contradicted": 0, "avg_freshness": 0.5}


def test_follows_the_latest_runs_source_set(tmp_path):
    with OverlayStore(tmp_path / "o.db") as store:
        store.record_run("audit", 1.0, ["bot"], True, summary(10, 1, 0))
        store.record_run("audit", 2.0, ["bot", "crm"], True, summary(20, 2, 2))
        store.record_run("audit", 3.0, ["bot"], False, summary(10, 2, 1))
        store.record_run("daemon", 4.0, ["bot"], None, summary(10, 9, 0))
        store.record_run("audit", 5.0, ["crm", "bot"], False, summary(20, 5, 5))
        both = trend_of(store, limit=10)
        assert both["sources"] == ["bot", "crm"]
        assert [r["stale_ratio"] for r in both["runs"]] == [0.2, 0.5]
        assert [r["delta_stale_ratio"] for r in both["runs"]] == [None, 0.3]
        bot = trend_of(store, limit=10, source="bot")
        assert [r["stale_ratio"] for r in bot["runs"]] == [0.1, 0.3]
        assert [r["passed"] for r in bot["runs"]] == [True, False]
        assert len(trend_of(store, limit=1, source="bot")["runs"]) == 1
        assert trend_of(store, source="nobody")["runs"] == []


def test_sparkline_scales_between_min_and_max():
    assert sparkline([0.0, 0.7, 0.3]) == "▁█▄"
    assert sparkline([0.2, 0.2]) == "▁▁"
    assert sparkline([]) == ""
