/**
 * A record as the page's code reads it, made so once, where records arrive (record-log.js, and
 * model.js's fold for records handed over in bulk): every field of the record format present —
 * `null` when the record does not carry it, as the server leaves out what is None — and `detail`
 * an object. The folds and the views then read plain properties (`r.note`, `r.detail.path`)
 * instead of asking whether a key is there.
 *
 * The field list is replay-file.js's FIELD_TYPES, which tests/js/test_replay_file_contract.py
 * holds equal to backend/core/records.py: the list is written once in Python and checked here.
 * Normalising changes the record in place and twice is the same as once. Pure: no DOM.
 */
import {FIELD_TYPES} from './replay-file.js';

const FIELDS = Object.keys(FIELD_TYPES);

/** `request` records of requests a broker sends to the controller: `broker_id` is the sender,
 * `controller_id` the receiver (backend/core/records.py). */
export const BROKER_TO_CONTROLLER_REQUESTS = new Set(['AlterIsr']);

export function normalize(r) {
  for (const field of FIELDS) if (r[field] === undefined) r[field] = null;
  if (!isObject(r.detail)) r.detail = {};
  return r;
}

/** A JSON object (Python's dict), not null or a list: what a znode's payload must be to be read. */
export function isObject(x) {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/** The fields a record really has (not null), in the record format's order: what a person reads. */
export function presentFields(r) {
  return FIELDS.filter((field) => field !== 'detail' && r[field] !== null && r[field] !== undefined);
}
