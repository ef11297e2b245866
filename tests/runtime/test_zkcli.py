"""An operator with ZooKeeper's own zkCli.sh acts on a live cluster, and the controller reacts as
Kafka's would: a topic created by hand, a preferred election triggered, ``deleteall /controller``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support import wait_until

ZKCLI = Path("/usr/share/zookeeper/bin/zkCli.sh")  # Debian's zookeeper package (installed by the set-up)


def zkcli(hosts: str, *command: str) -> str:
    result = subprocess.run([str(ZKCLI), "-server", hosts, *command], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_zkcli_admin_actions_drive_the_controller(start_cluster, zk_hosts, chroot):
    assert ZKCLI.exists(), "Debian's zookeeper package provides zkCli.sh; run make setup"
    cluster, recorder = start_cluster(brokers=(0, 1), config={"auto.leader.rebalance.enable": False})
    hosts = zk_hosts + chroot
    # A topic written by hand in the 1.1-era format (v1, no topic id): the controller creates it.
    zkcli(hosts, "create", "/brokers/topics/u", json.dumps({"version": 1, "partitions": {"0": [1, 0]}}))
    wait_until(lambda: cluster.inspect()["partitions"].get("u-0", {}).get("leader") == 1, 15, "u-0 to get leader 1")
    assert "leader" in zkcli(hosts, "get", "/brokers/topics/u/partitions/0/state")
    # Broker 1 goes; leadership moves to 0; broker 1 returns and catches up.
    cluster.brokers[1].crash()
    wait_until(lambda: cluster.inspect()["partitions"]["u-0"]["leader"] == 0, 10, "leader 0")
    cluster.brokers[1].start()
    wait_until(lambda: cluster.inspect()["partitions"]["u-0"]["isr"] == [0, 1], 15, "1 back in the ISR")
    # A preferred election, requested by hand.
    zkcli(hosts, "create", "/admin/preferred_replica_election",
          json.dumps({"version": 1, "partitions": [{"topic": "u", "partition": 0}]}))
    wait_until(lambda: cluster.inspect()["partitions"]["u-0"]["leader"] == 1, 10, "the preferred leader 1")
    wait_until(lambda: "preferred_replica_election" not in zkcli(hosts, "ls", "/admin"), 10,
               "the controller to delete the request znode")
    # The operator's trick: deleteall /controller forces an election with epoch + 1.
    zkcli(hosts, "deleteall", "/controller")
    wait_until(lambda: cluster.inspect()["controller_epoch"] == 2 and cluster.inspect()["controller"] is not None, 10,
               "a new controller with epoch 2")
    assert recorder.of("controller", to_state="elected", controller_epoch=2)
