"""A lesson's own cluster may be larger than a sandbox a request asks for (backend/scripts/limits.py)."""

from backend.scripts.cluster_spec import check_cluster
from backend.scripts.limits import MAX_LESSON_PARTITIONS, MAX_PARTITIONS, MAX_PARTITIONS_PER_TOPIC


def cluster(**topics):
    return {"brokers": [0, 1, 2], "topics": {name: {"partitions": n, "replication_factor": 2}
                                             for name, n in topics.items()}}


def test_a_lesson_starts_with_up_to_2000_partitions_a_sandbox_with_up_to_the_request_bounds():
    spec, _, issues = check_cluster(cluster(big=MAX_LESSON_PARTITIONS))
    assert issues == [] and spec.topics["big"].partitions == 2000
    _, _, issues = check_cluster(cluster(big=MAX_LESSON_PARTITIONS), sandbox=True)
    assert [message for _, message in issues] == [f"cluster.topics.big.partitions must be an integer from 1 to "
                                                  f"{MAX_PARTITIONS_PER_TOPIC}, got 2000"]
    _, _, issues = check_cluster(cluster(a=100, b=100, c=1), sandbox=True)
    assert any(f"at most {MAX_PARTITIONS} partitions" in message for _, message in issues)


def test_a_lesson_s_cluster_too_has_a_bound():
    _, _, issues = check_cluster(cluster(big=MAX_LESSON_PARTITIONS + 1))
    assert any("from 1 to 2000" in message for _, message in issues)
    _, _, issues = check_cluster(cluster(a=1500, b=1500))
    assert any(f"at most {MAX_LESSON_PARTITIONS} partitions" in message for _, message in issues)
