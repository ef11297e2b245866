/**
 * A replay log file -> its session header, its records up to the first damaged line, and where
 * and why it is damaged. The same rules, in the same order and mostly in the same words, as the
 * server's backend/view/replay_check.py (tests/js/test_replay_file_contract.py runs both on the
 * same damaged files), so the page and the replay list agree on "damaged at line N":
 *
 *   1. a line ends with "\n" (a last line without one was being written when the app stopped);
 *   2. a line is UTF-8 and one JSON value;
 *   3. line 1 is a session header; 4. every other line is a record of that session;
 *   5. seqs are dense from 0.
 *
 * `live` (the server says the session is being recorded right now): a last line without its
 * "\n" is then on its way, not damage. Pure: bytes in, values out (node tests it).
 * Known gaps against Python's json: 1.0 is an int here (JSON.parse cannot tell), NaN is not JSON.
 */

export const TORN = 'the last line is incomplete (the app stopped while writing it)';
export const EMPTY = 'the file is empty: a replay log starts with a session header';

// backend/core/records.py (the contract test compares them)
export const KINDS = ['zk', 'controller_event', 'controller', 'broker', 'partition', 'replica', 'election',
  'isr', 'request', 'log', 'fault', 'lesson', 'metric'];
export const ELECTIONS = ['offline', 'offline_unclean', 'preferred', 'controlled_shutdown', 'reassign'];
export const OUTCOMES = ['ok', 'rejected_stale_epoch', 'bad_version', 'invalid_transition', 'no_leader', 'error',
  'data_loss', 'refused'];
export const FIELD_TYPES = {
  v: 'int', session_id: 'str', seq: 'int', ts_ms: 'int', kind: 'str', subject: 'str',
  from_state: 'str', to_state: 'str', cause: 'str', cause_seq: 'int',
  controller_id: 'int', controller_epoch: 'int', topic: 'str', partition: 'int',
  broker_id: 'int', leader: 'int', isr: 'list[int]', leader_epoch: 'int',
  zk_version: 'int', zxid: 'int', election: 'str', outcome: 'str', note: 'str',
  op: 'str', offset: 'int', count: 'int', acks: 'str', step: 'int', student: 'str',
  answer: 'str', correct: 'bool', question: 'str', misconception: 'str', detail: 'dict',
};
const REQUIRED = ['v', 'session_id', 'seq', 'ts_ms', 'kind', 'subject'];
const MUST_HAVE = ['kind', 'subject', 'session_id', 'seq', 'ts_ms'];
export const HEADER_TYPES = {
  session_id: 'str', mode: 'str', started_ms: 'int', app_version: 'str', cluster: 'dict',
  lesson_id: 'str', class_id: 'str', student: 'str',
};
const HEADER_REQUIRED = ['session_id', 'mode', 'started_ms', 'app_version', 'cluster'];
const HEADER_FIELDS = [...Object.keys(HEADER_TYPES), 'kind', 'v'];

class Damaged extends Error {}

const isInt = (x) => typeof x === 'number' && Number.isInteger(x);
const isDict = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const IS = {
  int: isInt, str: (x) => typeof x === 'string', bool: (x) => typeof x === 'boolean', dict: isDict,
  'list[int]': (x) => Array.isArray(x) && x.every(isInt),
};

/** Python's name for a JSON value's type, so messages read as the server's do. */
export function pyType(x) {
  if (x === null) return 'NoneType';
  if (typeof x === 'boolean') return 'bool';
  if (typeof x === 'number') return Number.isInteger(x) ? 'int' : 'float';
  if (typeof x === 'string') return 'str';
  return Array.isArray(x) ? 'list' : 'dict';
}

/** Python's repr() of a JSON value (strings with both quote kinds: near enough). */
export function pyRepr(x) {
  if (x === null || x === undefined) return 'None';
  if (typeof x === 'boolean') return x ? 'True' : 'False';
  if (typeof x === 'string') return x.includes("'") && !x.includes('"') ? `"${x}"` : `'${x.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
  if (typeof x === 'number') return String(x);
  if (Array.isArray(x)) return `[${x.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(x).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
}

export function parseHeader(data) {
  if (!isDict(data) || data.kind !== 'session') throw new Damaged("a replay log must start with a session header (kind 'session')");
  if (data.v !== 1 && data.v !== true) throw new Damaged(`unsupported session header version ${pyRepr(data.v)}`); // True == 1 in Python
  const unknown = Object.keys(data).filter((k) => !HEADER_FIELDS.includes(k)).sort();
  if (unknown.length) throw new Damaged(`unknown session header field(s): ${unknown.join(', ')}`);
  for (const name of HEADER_REQUIRED) if (!(name in data)) throw new Damaged(`session header field '${name}' is missing`);
  for (const [name, type] of Object.entries(HEADER_TYPES)) {
    const value = data[name] ?? null;
    if (value === null && !HEADER_REQUIRED.includes(name)) continue;
    if (!IS[type](value)) throw new Damaged(`session header field '${name}' must be ${type}, got ${pyType(value)} ${pyRepr(value)}`);
  }
  if (!data.session_id) throw new Damaged("session header field 'session_id' must not be empty");
  return data;
}

export function parseRecord(data) {
  if (!isDict(data)) throw new Damaged(`a record must be a JSON object, not ${pyType(data)}`);
  if (data.v !== 1 && data.v !== true) throw new Damaged(`unsupported record version ${pyRepr(data.v)}: this build reads version 1`);
  const unknown = Object.keys(data).filter((k) => !(k in FIELD_TYPES)).sort();
  if (unknown.length) throw new Damaged(`unknown record field(s): ${unknown.join(', ')}`);
  for (const name of MUST_HAVE) if (!(name in data)) throw new Damaged(`record field '${name}' is missing`);
  for (const [name, value] of Object.entries(data)) {
    if (value === null) {
      if (REQUIRED.includes(name)) throw new Damaged(`record field '${name}' must not be null`);
      continue;
    }
    const type = FIELD_TYPES[name];
    if (!IS[type](value)) throw new Damaged(`record field '${name}' must be ${type}, got ${pyType(value)} ${pyRepr(value)}`);
  }
  if (!KINDS.includes(data.kind)) throw new Damaged(`record field 'kind': ${pyRepr(data.kind)} is not one of ${KINDS.join(', ')}`);
  if (data.seq < 0) throw new Damaged(`record field 'seq' must be >= 0, got ${data.seq}`);
  for (const [name, allowed] of [['election', ELECTIONS], ['outcome', OUTCOMES]]) {
    if (data[name] != null && !allowed.includes(data[name])) {
      throw new Damaged(`record field '${name}': ${pyRepr(data[name])} is not one of ${allowed.join(', ')}`);
    }
  }
  return data;
}

/** The lines of a log as byte arrays, each without its "\n"; `complete` tells whether it had one. */
function* lines(bytes) {
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(10, start);
    if (end < 0) break;
    yield {bytes: bytes.subarray(start, end), complete: true};
    start = end + 1;
  }
  if (start < bytes.length) yield {bytes: bytes.subarray(start), complete: false};
}

/**
 * Parse a whole log: `input` is an ArrayBuffer, a Uint8Array or a string.
 * Returns {header, records, damage: {line, reason} | null, lastSeq, pending}; `pending`: a
 * live log's last line that is still being written was left out.
 */
export function parseReplayLog(input, {live = false} = {}) {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input)
    : input instanceof Uint8Array ? input : new Uint8Array(input);
  const decoder = new TextDecoder('utf-8', {fatal: true});
  let header = null;
  const records = [];
  let damage = null;
  let pending = false;
  let number = 0;
  for (const line of lines(bytes)) {
    number += 1;
    if (!line.complete && live) {
      pending = true;
      break;
    }
    try {
      if (!line.complete) throw new Damaged(TORN);
      let text;
      try {
        text = decoder.decode(line.bytes);
      } catch {
        throw new Damaged('the line is not UTF-8');
      }
      let data;
      try {
        data = JSON.parse(text);
      } catch (error) {
        throw new Damaged(text.trim() ? `the line is not JSON (${error.message})` : 'the line is empty');
      }
      if (number === 1) {
        header = parseHeader(data);
        continue;
      }
      if (isDict(data) && data.kind === 'session') throw new Damaged('a second session header: two logs were joined into one file');
      const record = parseRecord(data);
      const last = records.length ? records[records.length - 1].seq : null;
      if (record.seq !== (last === null ? 0 : last + 1)) {
        throw new Damaged(last === null
          ? `the first record has seq ${record.seq}, not 0: the records before it are missing`
          : `seq ${record.seq} follows ${last}: records are missing or out of order`);
      }
      if (record.session_id !== header.session_id) {
        throw new Damaged(`the record belongs to session ${pyRepr(record.session_id)}, not to this log's ${pyRepr(header.session_id)}`);
      }
      records.push(record);
    } catch (error) {
      if (!(error instanceof Damaged)) throw error;
      damage = {line: number, reason: error.message};
      break;
    }
  }
  if (header === null && damage === null && !live) damage = {line: 1, reason: EMPTY};
  const lastSeq = records.length ? records[records.length - 1].seq : -1;
  return {header, records, damage, lastSeq, pending};
}

/** The sentence the page shows about a damaged log. */
export function damageMessage(damage, lastSeq) {
  const upTo = lastSeq >= 0 ? `showing records up to seq ${lastSeq}` : 'there are no records to show';
  return `This log is damaged at line ${damage.line}: ${damage.reason}; ${upTo}.`;
}
