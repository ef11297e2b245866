// Parse replay logs with the page's rules (static/js/replay-file.js) and print, per file, one
// JSON line: {session_id, records, lastSeq, damage, pending}. With --tables: the record schema
// tables the page uses. For tests/js/test_replay_file_contract.py.
//
//   node tests/js/parse_replay.mjs [--live] FILE...
//   node tests/js/parse_replay.mjs --tables
import {readFileSync} from 'node:fs';
import {ELECTIONS, FIELD_TYPES, HEADER_TYPES, KINDS, OUTCOMES, parseReplayLog} from '../../static/js/replay-file.js';

const args = process.argv.slice(2);
if (args.includes('--tables')) {
  process.stdout.write(`${JSON.stringify({KINDS, ELECTIONS, OUTCOMES, FIELD_TYPES, HEADER_TYPES})}\n`);
} else {
  const live = args.includes('--live');
  for (const file of args.filter((a) => !a.startsWith('--'))) {
    const parsed = parseReplayLog(readFileSync(file), {live});
    process.stdout.write(`${JSON.stringify({session_id: parsed.header?.session_id ?? null, records: parsed.records.length,
      lastSeq: parsed.lastSeq, damage: parsed.damage, pending: parsed.pending})}\n`);
  }
}
