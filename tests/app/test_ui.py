"""Unit tests of the dashboard's shared UI helpers that need no running page."""

from app import ui


def test_checkpoint_ids_help_maps_each_label_to_its_id() -> None:
    labels = {"ckpt-aaa": "Lite #1", "ckpt-bbb": "Full #2"}
    assert ui.checkpoint_ids_help(labels) == "Ids: Lite #1 = ckpt-aaa; Full #2 = ckpt-bbb"
