"""The replica log and KIP-101 truncation, on the cases that motivated it."""

from backend.core.broker.log import UNDEFINED_EPOCH, Log, LogEntry, truncation_offset


def log_of(*epochs_and_counts):
    """log_of((0, 2), (1, 3)): 2 messages written in epoch 0, then 3 in epoch 1."""
    log = Log()
    for epoch, count in epochs_and_counts:
        log.append_as_leader([f"m{log.log_end_offset + i}" for i in range(count)], epoch, "1")
    return log


def test_append_assigns_dense_offsets_and_the_epoch_cache():
    log = log_of((0, 2), (2, 3))
    assert log.log_end_offset == 5 and log.epoch_cache == [(0, 0), (2, 2)]
    assert [e.offset for e in log.read(1, 4)] == [1, 2, 3]
    assert log.latest_epoch == 2


def test_high_watermark_only_moves_forward_and_never_past_the_leo():
    log = log_of((0, 3))
    assert log.update_high_watermark(2) and not log.update_high_watermark(1)
    log.update_high_watermark(10)
    assert log.high_watermark == 3


def test_end_offset_for_epoch():
    log = log_of((0, 2), (2, 3), (5, 1))
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(1) == (0, 2)  # the floor epoch, ending where epoch 2 starts
    assert log.end_offset_for_epoch(3) == (2, 5)
    assert log.end_offset_for_epoch(5) == (5, 6)
    assert log.end_offset_for_epoch(9) == (5, 6)
    assert log_of((3, 1)).end_offset_for_epoch(1) == (UNDEFINED_EPOCH, -1)


def test_truncate_drops_entries_epochs_and_caps_the_high_watermark():
    log = log_of((0, 2), (1, 3))
    log.update_high_watermark(4)
    removed = log.truncate_to(2)
    assert [e.offset for e in removed] == [2, 3, 4]
    assert log.log_end_offset == 2 and log.epoch_cache == [(0, 0)] and log.high_watermark == 2
    log.append([LogEntry(2, 3, "x")])
    assert log.epoch_cache == [(0, 0), (3, 2)]


def test_kip101_follower_keeps_a_committed_message_truncation_to_hw_would_lose():
    """KIP-101 scenario 1: the follower has m1 but its HW lags; truncating to the HW (pre-0.11)
    would drop m1 although the leader has it."""
    leader, follower = log_of((0, 2)), log_of((0, 2))
    follower.high_watermark = 1
    epoch, end = leader.end_offset_for_epoch(follower.latest_epoch)
    assert truncation_offset(follower, epoch, end) == 2


def test_kip101_diverging_logs_are_truncated_to_the_epoch_boundary():
    """KIP-101 scenario 2: the old leader wrote m2 in epoch 1 that nobody else has; the new
    leader wrote a different m2 in epoch 2. The old leader must drop its m2."""
    old_leader, new_leader = log_of((0, 2), (1, 1)), log_of((0, 2), (2, 1))
    epoch, end = new_leader.end_offset_for_epoch(old_leader.latest_epoch)
    assert (epoch, end) == (0, 2)
    assert truncation_offset(old_leader, epoch, end) == 2


def test_unknown_epoch_falls_back_to_the_high_watermark():
    follower = log_of((0, 3))
    follower.high_watermark = 1
    assert truncation_offset(follower, UNDEFINED_EPOCH, -1) == 1
