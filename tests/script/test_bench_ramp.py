"""The classroom bench's ramp (``bench/ramp.py``, ``classroom.py --fault-intervals``): which rate a variant held.

Issue 14's target "2 workers vs 1, faults/s at p99 < 250 ms" is read from it, so its rule must
hold: a rate counts only when both p99s are under the aim with nothing refused or lost, and only
when every slower rate held too."""

from bench.ramp import ramp


def run(variant: str, rate: float, page: float, demo: float, refused: int = 0, lost: int = 0,
        kafka_refused: int = 0) -> dict:
    return {"variant": variant, "fault_interval_s": 100 / rate, "faults_per_s": rate,
            "fault_to_page": {"p99_ms": page}, "demo_to_every_student": {"p99_ms": demo},
            "faults_refused": refused + kafka_refused, "faults_refused_by_the_server": refused,
            "fault_records_lost": lost, "demo_records_lost": 0,
            "server_cpu_pct_of_one_core": 50.0, "server_cpu_ms_per_fault": 30.0,
            "machine_stolen_pct_of_all_cores": 1.0}


def test_the_fastest_rate_with_both_tails_inside_the_aim_and_the_ratio_of_two_workers():
    runs = [run("head-1w", 10, 120, 140), run("head-2w", 10, 100, 110),
            run("head-2w", 15, 150, 180), run("head-1w", 15, 200, 260),  # the demo missed: 1w holds 10
            run("head-1w", 20, 240, 200), run("head-2w", 20, 230, 240)]  # a lucky 1w rate after a miss
    said = ramp(runs, 250.0)
    assert said["held_faults_per_s"] == {"head-1w": 10, "head-2w": 20}
    assert said["two_workers_over_one"] == 2.0
    assert [row["held"] for row in said["rates"]["head-1w"]] == [True, False, True]


def test_a_refusal_or_a_lost_record_is_a_rate_not_held():
    said = ramp([run("head-1w", 10, 100, 100), run("head-1w", 15, 100, 100, refused=1),
                 run("head-2w", 10, 100, 100, lost=1)], 250.0)
    assert said["held_faults_per_s"] == {"head-1w": 10, "head-2w": 0.0}
    assert said["two_workers_over_one"] == 0.0


def test_what_kafka_refuses_too_is_not_the_servers_refusal():
    """A produce to a crashed leader before its session expired times out in Kafka as well."""
    said = ramp([run("head-1w", 10, 100, 100, kafka_refused=5), run("head-1w", 15, 100, 100, kafka_refused=9)],
                250.0)
    assert said["held_faults_per_s"] == {"head-1w": 15}
