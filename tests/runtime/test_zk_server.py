"""The embedded ZooKeeper: launcher, jar discovery, ensemble and ``kclab zk``, all with real JVMs.

What matters most here is that a JVM never outlives its owner, however the owner ends.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import zipfile

import pytest
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from backend.zkserver.classpath import ZooKeeperNotFound, find_zookeeper_classpath
from backend.zkserver.ensemble import ZooKeeperEnsemble
from backend.zkserver.server import ZooKeeperServer, ZooKeeperStartError
from tests.support import (LineReader, child_pids, close_client, kclab_command, pid_alive,
                           started_client, wait_until)

ZK_MAIN = "QuorumPeerMain"
NOT_SERVING = (KazooException, KazooTimeoutError)


def assert_round_trip(hosts: str) -> None:
    client = started_client(hosts)
    try:
        client.create("/lab/greeting", b"hello", makepath=True)
        assert client.get("/lab/greeting")[0] == b"hello"
    finally:
        close_client(client)


def wait_gone(pid: int, what: str) -> None:
    wait_until(lambda: not pid_alive(pid), 10, f"{what}: JVM {pid} is still running")


def test_session_server_serves_kazoo_in_a_chroot(zk_client, zk_root_client, chroot):
    zk_client.create("/brokers/ids/1", b'{"host":"b1"}', makepath=True)
    assert zk_client.get("/brokers/ids/1")[0] == b'{"host":"b1"}'
    assert zk_root_client.exists(f"{chroot}/brokers/ids/1"), "the chroot did not confine the client"


def test_stop_leaves_no_java_process_and_no_temp_dir():
    server = ZooKeeperServer(force_sync=False).start()
    pid, base_dir = server.pid, server.base_dir
    assert pid in child_pids(os.getpid(), ZK_MAIN)
    assert server.mode() == "standalone"
    assert_round_trip(server.hosts)

    server.stop()
    assert not pid_alive(pid), "stop() returned while the JVM still runs"
    assert not base_dir.exists()
    server.stop()  # idempotent
    assert server.pid is None and not server.running


def test_sessions_may_last_from_1_s_to_60_s():
    with ZooKeeperServer(force_sync=False) as server:
        clients = [started_client(server.hosts, timeout=seconds) for seconds in (1.0, 60.0, 120.0)]
        try:
            negotiated = re.findall(r"to=(\d+)", server.four_letter_word("cons"))
            assert sorted(negotiated, key=int) == ["1000", "60000", "60000"], negotiated
        finally:
            for client in clients:
                close_client(client)


def test_a_given_data_dir_is_kept_across_restarts(tmp_path):
    server = ZooKeeperServer(data_dir=tmp_path / "zk")  # forceSync on: the default
    with server:
        client = started_client(server.hosts)
        client.create("/kept", b"1")
        close_client(client)
    assert (tmp_path / "zk" / "zoo.cfg").exists()
    with server:
        client = started_client(server.hosts)
        try:
            assert client.get("/kept")[0] == b"1"
        finally:
            close_client(client)


def test_a_failed_start_explains_itself_with_the_log_tail():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        server = ZooKeeperServer(busy.getsockname()[1], force_sync=False)
        with pytest.raises(ZooKeeperStartError) as failure:
            server.start(timeout=30)
    message = str(failure.value)
    assert "exited while starting" in message and "Last lines of" in message
    assert "Address already in use" in message
    assert not server.running


def test_pyspark_jars_are_a_working_fallback():
    classpath = find_zookeeper_classpath(("pyspark",))
    assert "pyspark" in classpath.source and classpath.version.startswith("3.9"), classpath
    with ZooKeeperServer(force_sync=False, classpath=classpath) as server:
        assert_round_trip(server.hosts)


def test_zookeeper_home_comes_first(tmp_path, monkeypatch):
    lib = tmp_path / "release" / "lib"
    lib.mkdir(parents=True)
    with zipfile.ZipFile(lib / "zookeeper-3.7.9.jar", "w") as jar:
        jar.writestr("META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties", "version=3.7.9\n")
    with zipfile.ZipFile(lib / "netty-codec-4.1.jar", "w") as jar:
        jar.writestr("README", "")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path / "release"))
    found = find_zookeeper_classpath()
    assert found.version == "3.7.9" and "ZOOKEEPER_HOME" in found.source
    assert found.classpath.split(os.pathsep) == [str(lib / "netty-codec-4.1.jar"), str(lib / "zookeeper-3.7.9.jar")]


def test_the_classpath_error_names_all_three_places(tmp_path):
    with pytest.raises(ZooKeeperNotFound) as failure:
        find_zookeeper_classpath(zookeeper_home=str(tmp_path / "no-release"),
                                 debian_java_dir=str(tmp_path / "no-debian"),
                                 pyspark_dir=str(tmp_path / "no-pyspark"))
    message = str(failure.value)
    assert "ZOOKEEPER_HOME" in message and str(tmp_path / "no-release") in message
    assert str(tmp_path / "no-debian" / "zookeeper.jar") in message
    assert "pyspark" in message and str(tmp_path / "no-pyspark" / "jars") in message


def test_ensemble_survives_its_leader_but_not_two_servers():
    with ZooKeeperEnsemble(3, force_sync=False) as ensemble:
        assert sorted(ensemble.modes().values()) == ["follower", "follower", "leader"]
        old_leader = ensemble.leader()
        client = started_client(ensemble.hosts)
        try:
            def write(value: bytes):
                return client.set_async("/lesson", value).get(timeout=2)

            client.create("/lesson", b"0")
            ensemble.stop_server(old_leader, kill=True)
            wait_until(lambda: write(b"1"), 20, "no write succeeded after the leader died",
                       retry_on=NOT_SERVING)
            new_leader = ensemble.wait_for_quorum(20)
            assert new_leader != old_leader

            follower = next(myid for myid, mode in ensemble.modes().items() if mode == "follower")
            ensemble.stop_server(follower, kill=True)
            wait_until(lambda: ensemble.modes()[new_leader] is None, 10,
                       f"server {new_leader} still serves alone, without a quorum")
            with pytest.raises(NOT_SERVING):
                write(b"2")

            ensemble.start_server(follower, timeout=None)
            ensemble.wait_for_quorum(30)
            wait_until(lambda: write(b"3"), 20, "no write succeeded after the quorum came back",
                       retry_on=NOT_SERVING)
            assert client.get("/lesson")[0] == b"3"
        finally:
            close_client(client)
    assert not any(server.running for server in ensemble.servers.values())


def start_kclab_zk(*args: str):
    proc = subprocess.Popen([*kclab_command(), "zk", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = LineReader(proc.stdout), LineReader(proc.stderr)
    hosts = out.wait_for(r"^connect string: (\S+)$", 60, proc).group(1)
    return proc, out, err, hosts


@pytest.mark.parametrize("args, stop_signal, servers", [
    ((), signal.SIGINT, 1),
    (("--servers", "3"), signal.SIGTERM, 3),
], ids=["standalone-ctrl-c", "ensemble-sigterm"])
def test_kclab_zk_serves_until_signalled(args, stop_signal, servers):
    proc, out, err, hosts = start_kclab_zk(*args)
    try:
        assert len(hosts.split(",")) == servers
        out.wait_for(re.escape(f"{hosts}/kclab/<cluster-id>"), 10, proc)
        jvms = child_pids(proc.pid, ZK_MAIN)
        assert len(jvms) == servers, jvms
        assert_round_trip(hosts)

        proc.send_signal(stop_signal)
        assert proc.wait(timeout=30) == 0, err.text()
        for pid in jvms:
            wait_gone(pid, f"kclab zk stopped by {stop_signal.name}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_of_kclab_zk_takes_its_jvm_along():
    proc, out, _err, hosts = start_kclab_zk()
    try:
        [jvm] = child_pids(proc.pid, ZK_MAIN)
        data_dir = out.wait_for(r"^data: (\S+) ", 10, proc).group(1)
        proc.kill()  # no atexit, no finally: only the kernel's parent-death signal can help
        proc.wait(timeout=10)
        wait_gone(jvm, "kclab zk was SIGKILLed (PR_SET_PDEATHSIG should have killed its JVM)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shutil.rmtree(data_dir, ignore_errors=True)  # nobody was left to remove it
