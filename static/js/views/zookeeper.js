/**
 * ZooKeeper's znode tree as the observer saw it: each znode with its data and version;
 * ephemeral znodes with the session (and broker) that owns them — and, when that broker crashed,
 * the countdown to the session's expiry (session-countdown.js), with the session timeout in use.
 * A change flashes; a write ZooKeeper refused (a fenced controller's) flashes red and stays marked.
 * One list item per znode, joined by path, so a change updates the item in place.
 */
import d3 from '/vendor/d3.mjs';
import {ownerCountdown, sessionTimeoutText} from '../session-countdown.js';
import {compactJson, flash, prettyJson} from './util.js';

const INLINE_CHARS = 60;

export function createZookeeperView(container) {
  const timeoutNote = d3.select(container).append('p').attr('class', 'session-timeout-note');
  const ghostList = d3.select(container).append('ul').attr('class', 'znode-ghosts').attr('aria-live', 'polite');
  const list = d3.select(container).append('ul').attr('class', 'znode-tree');
  const expanded = new Set(['/controller', '/controller_epoch']);

  let keys = '';
  let paths = [];

  function render(view, ctx) {
    const clock = ctx.moment?.ms ?? null; // the moment shown; the cluster view keeps redrawing while one counts down
    timeoutNote.text(sessionTimeoutText(view));
    renderGhosts(view, ctx);
    const now = Object.keys(view.znodes);
    if (now.join('\n') !== keys) { // sort only when znodes come or go
      keys = now.join('\n');
      paths = now.sort(byPath);
    }
    const owners = sessionOwners(view);
    list.selectAll('li.znode').data(paths, (p) => p).join(
      (enter) => enter.append('li').attr('class', 'znode')
        .attr('data-path', (p) => p)
        .style('--depth', (p) => p.split('/').length - 2)
        .call((li) => {
          const head = li.append('button').attr('type', 'button').attr('class', 'znode-head')
            .on('click', (event, p) => {
              if (expanded.has(p)) expanded.delete(p);
              else expanded.add(p);
              ctx.invalidate();
            });
          head.append('span').attr('class', 'znode-name').text((p) => p.slice(p.lastIndexOf('/') + 1) || '/');
          head.append('span').attr('class', 'znode-version');
          head.append('span').attr('class', 'badge ephemeral');
          head.append('span').attr('class', 'badge refused');
          li.append('pre').attr('class', 'znode-data');
        })
        .call((li) => { if (ctx.animate) li.classed('entering', true); }),
      (update) => update.classed('entering', false),
      (exit) => exit.remove(),
    )
      .order()
      .attr('data-version', (p) => view.znodes[p].version ?? '')
      .attr('title', (p) => p)
      .each(function update(p) {
        const z = view.znodes[p];
        const owner = z.ephemeral_owner ? ephemeralText(z, owners, ownerCountdown(view, z.ephemeral_owner, clock)) : '';
        const key = `${z.changed_seq}|${z.refused_seq}|${expanded.has(p)}|${owner}`;
        if (this.__key === key) return; // nothing new for this znode
        this.__key = key;
        const li = d3.select(this);
        const text = z.data === null || z.data === undefined ? '' : compactJson(z.data);
        const long = text.length > INLINE_CHARS;
        const open = expanded.has(p) || !long;
        li.select('.znode-head').attr('aria-expanded', long ? String(open) : null)
          .attr('aria-label', `${p}, version ${z.version ?? '?'}${z.ephemeral_owner ? ', ephemeral' : ''}`
            + `${long ? (open ? ', data shown' : ', data hidden') : ''}`);
        li.select('.znode-version').text(`v${z.version ?? '?'}`);
        li.select('.ephemeral').text(owner).classed('hidden', !owner);
        li.select('.refused').text(Number.isInteger(z.refused_seq) ? `write refused (#${z.refused_seq})` : '')
          .classed('hidden', !Number.isInteger(z.refused_seq));
        li.select('.znode-data').text(text === '' ? '' : (open ? prettyJson(z.data) : `${text.slice(0, INLINE_CHARS)}…`))
          .classed('hidden', text === '').classed('collapsed', !open);
        if (ctx.animate && this.__changed !== undefined && this.__changed !== z.changed_seq) flash(this, 'flash');
        if (ctx.animate && this.__refused !== z.refused_seq && Number.isInteger(z.refused_seq)) flash(this, 'flash-refused');
        this.__changed = z.changed_seq;
        this.__refused = z.refused_seq;
      });
  }

  /**
   * A write ZooKeeper refused to a znode that is gone (the zombie's delete of a znode the new
   * controller already deleted) has no item to mark: the fold keeps the last refused write
   * (`view.last_refused`), and while its znode does not exist it shows above the tree — also
   * after a scrub or a reload, since it comes from the fold and not from the records of a frame.
   */
  function renderGhosts(view, ctx) {
    const refused = view.last_refused;
    const ghosts = refused && !(refused.path in view.znodes) ? [refused] : [];
    ghostList.selectAll('li').data(ghosts, (g) => g.seq).join(
      (enter) => enter.append('li').attr('class', 'znode ghost')
        .attr('data-refused-path', (g) => g.path)
        .call((li) => { if (ctx.animate) li.classed('flash-refused', true); })
        .call((li) => li.append('span').attr('class', 'badge refused').text((g) => `write refused (#${g.seq})`))
        .call((li) => li.append('span').attr('class', 'znode-name').text((g) => `${g.write ?? 'write'} ${g.path}`))
        .call((li) => li.append('p').attr('class', 'ghost-note').text((g) => g.note ?? '')),
    );
  }

  return {render};
}

/** Compare paths component by component, so a znode's children follow it directly. */
function byPath(a, b) {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}

/** ZooKeeper session id -> broker id, from the brokers' registrations. */
function sessionOwners(view) {
  const owners = new Map();
  for (const b of Object.values(view.brokers)) if (b.session) owners.set(b.session, b.id);
  return owners;
}

function ephemeralText(z, owners, dying) {
  const broker = z.owner_broker ?? owners.get(z.ephemeral_owner);
  const text = `ephemeral · session ${z.ephemeral_owner}${broker === undefined || broker === null ? '' : ` · broker ${broker}`}`;
  return dying ? `${text} · owner crashed: ${dying.text}` : text;
}
