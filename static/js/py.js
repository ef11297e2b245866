/**
 * Python's semantics for the folds (model.js, lesson-model.js): they restate
 * backend/view/cluster_view.py line by line, and tests/js/test_model_contract.py checks that
 * both give the same view, so `get`, `or {}`, truthiness and `str()` must behave as Python's.
 */

// Python's dict.get(key, default): the default only when the key is absent; never undefined.
export function get(obj, key, fallback = null) {
  if (obj === null || typeof obj !== 'object' || !Object.prototype.hasOwnProperty.call(obj, key)) return fallback;
  const value = obj[key];
  return value === undefined ? null : value;
}

export function has(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

export function isDict(x) {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

// `x or {}` in Python: any falsy value (None, {}, [], "", 0) becomes an empty mapping.
export function orEmpty(x) {
  return truthy(x) ? x : {};
}

export function truthy(x) {
  if (x === null || x === undefined || x === false || x === 0 || x === '') return false;
  if (Array.isArray(x)) return x.length > 0;
  if (typeof x === 'object') return Object.keys(x).length > 0;
  return true;
}

// f"{x}" / str(x) for the values a record holds (None prints as "None", booleans as True/False).
export function pyStr(x) {
  if (x === null || x === undefined) return 'None';
  if (x === true) return 'True';
  if (x === false) return 'False';
  return String(x);
}
