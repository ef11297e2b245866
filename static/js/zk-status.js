/**
 * Is the server's ZooKeeper there? A banner says "ZooKeeper unreachable since …" and the page's
 * actions are greyed out with that reason until it is back (the server would refuse them with
 * a 503 anyway). The state comes from /healthz once at start and then from the server's
 * `zookeeper` socket event; while it is down, /healthz is asked every few seconds as well, in
 * case the socket is what broke. One page = one small request now and then, not a poll per tab.
 *
 * Testable DOM: body[data-zookeeper="up"|"down"], #zk-banner (role=alert) with the reason.
 */
const RECHECK_MS = 4000;

export function zookeeperStatus({banner, body = document.body, fetchHealth = defaultFetch} = {}) {
  let timer = null;

  function show(status) {
    const down = status && status.ok === false;
    body.dataset.zookeeper = down ? 'down' : 'up';
    banner.hidden = !down;
    if (down) {
      const since = new Date(status.since_ms).toLocaleTimeString();
      const state = status.state === 'lost' ? 'its sessions expired' : status.state;
      banner.textContent = `ZooKeeper unreachable since ${since} (${state}): actions are paused until it is back. `
        + 'The server reconnects by itself; brokers re-register as Kafka’s do.';
      body.title = 'ZooKeeper is unreachable: nothing can change until it is back';
    } else {
      body.removeAttribute('title');
    }
    clearTimeout(timer);
    timer = down ? setTimeout(check, RECHECK_MS) : null;
  }

  async function check() {
    const status = await fetchHealth().catch(() => null);
    if (status?.zookeeper) show(status.zookeeper);
    else if (body.dataset.zookeeper === 'down') timer = setTimeout(check, RECHECK_MS);
  }

  return {update: show, check};
}

async function defaultFetch() {
  const response = await fetch('/healthz', {headers: {Accept: 'application/json'}});
  return response.json();
}
