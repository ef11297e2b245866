// Fold a replay log with the browser's model (static/js/model.js) and print the view as JSON.
//
//   node tests/js/fold.mjs LOG.jsonl                   the view after every record
//   node tests/js/fold.mjs LOG.jsonl --cuts 0,10,99    one line per cut: the view after that seq
//   node tests/js/fold.mjs LOG.jsonl --snapshot S.json start from a server snapshot {seq, view}
//                                                      and fold what follows, as the page does
//   node tests/js/fold.mjs LOG.jsonl --each invariants one line per record: view.invariants after it
// A replay log's first line is its session header; every other line is one record.
import {readFileSync} from 'node:fs';
import {apply, clone, emptyView} from '../../static/js/model.js';
import {normalize} from '../../static/js/record.js';

const args = process.argv.slice(2);
const path = args[0];
if (!path) {
  process.stderr.write('usage: node tests/js/fold.mjs REPLAY.jsonl [--cuts a,b,c] [--snapshot FILE]\n');
  process.exit(2);
}
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const records = [];
for (const line of readFileSync(path, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const data = JSON.parse(line);
  if (data.kind === 'session') continue; // the header
  records.push(normalize(data)); // as the page does when a record arrives (record-log.js)
}

const snapshotFile = option('--snapshot');
const view = snapshotFile ? clone(JSON.parse(readFileSync(snapshotFile, 'utf8')).view) : emptyView();
const cuts = option('--cuts');
const each = option('--each');
if (each !== undefined) {
  for (const record of records) {
    apply(view, record);
    process.stdout.write(JSON.stringify(view[each]) + '\n');
  }
} else if (cuts === undefined) {
  for (const record of records) apply(view, record);
  process.stdout.write(JSON.stringify(view) + '\n');
} else {
  const wanted = cuts.split(',').map(Number).sort((a, b) => a - b);
  let next = 0;
  for (const record of records) {
    apply(view, record);
    while (next < wanted.length && wanted[next] <= record.seq) {
      process.stdout.write(JSON.stringify(view) + '\n');
      next += 1;
    }
  }
  for (; next < wanted.length; next += 1) process.stdout.write(JSON.stringify(view) + '\n');
}
