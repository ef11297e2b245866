/**
 * PURE bookkeeping of the rules' violations: a port of backend/view/violations.py.
 *
 * A state violation is opened under a key while it lasts (waiting may become broken: that
 * counts) and closed when repaired; an event violation stays open. Each rule keeps its newest
 * KEEP open and closed violations and the count of every one that broke it. Also the few ways
 * the checks put things in words, so the page says exactly what `kclab check` says.
 */
export const KEEP = 10;

export function openViolation(c, ruleId, key, r, text, status, subject, causeSeq = null) {
  const rule = c.rules[ruleId];
  const found = rule.open.find((v) => v.key === key);
  if (found === undefined) {
    rule.open.push({key, seq: r.seq, cause_seq: causeSeq, subject, status, text});
    rule.count += status === 'broken' ? 1 : 0;
  } else {
    rule.count += found.status === 'waiting' && status === 'broken' ? 1 : 0;
    Object.assign(found, {status, text});
  }
  settle(rule);
}

export function closeViolation(c, ruleId, key, r) {
  const rule = c.rules[ruleId];
  const index = rule.open.findIndex((v) => v.key === key);
  if (index < 0) return;
  const [found] = rule.open.splice(index, 1);
  rule.closed = [...rule.closed, {...found, until: r.seq}].slice(-KEEP);
  settle(rule);
}

/** A violation that stays: what happened cannot be undone (the newest KEEP are kept). */
export function eventViolation(c, ruleId, r, text, subject, causeSeq = null, extra = {}) {
  const rule = c.rules[ruleId];
  const cause = causeSeq !== null ? causeSeq : r.cause_seq;
  rule.open = [...rule.open, {key: `#${r.seq}`, seq: r.seq, cause_seq: cause, subject, status: 'broken', text, ...extra}]
    .slice(-KEEP);
  rule.count += 1;
  settle(rule);
}

function settle(rule) {
  const states = new Set(rule.open.map((v) => v.status));
  rule.status = states.has('broken') ? 'broken' : states.has('waiting') ? 'waiting' : 'holds';
}

export function isInt(x) {
  return Number.isInteger(x);
}

/** Python's str() of a value in a sentence (None as 'None'), so the page says what `kclab check` says. */
export function str(x) {
  return x === null || x === undefined ? 'None' : String(x);
}

export function brokersText(brokers) {
  return `[${brokers.map(str).join(', ')}]`;
}

export function andText(brokers) {
  return `${brokers.slice(0, -1).map(str).join(', ')} and ${str(brokers[brokers.length - 1])}`;
}

/** [2, 3, 4, 7] as "2–4, 7": how a student reads a run of offsets. */
export function ranges(offsets) {
  if (offsets.length === 0) return 'none';
  const out = [];
  let start = offsets[0];
  for (let i = 0; i < offsets.length; i += 1) {
    const previous = offsets[i];
    const current = i + 1 < offsets.length ? offsets[i + 1] : null;
    if (current !== previous + 1) {
      out.push(start === previous ? `${start}` : `${start}–${previous}`);
      start = current;
    }
  }
  return out.join(', ');
}
