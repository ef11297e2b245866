/** Small helpers the views share: colours by epoch, flashes, JSON for people. */
import d3 from '/vendor/d3.mjs';

const EPOCH_COLOURS = d3.schemeTableau10;

/** One colour per controller epoch, so a stale controller's requests look different. */
export function epochColour(epoch) {
  if (epoch === null || epoch === undefined) return '#999';
  return EPOCH_COLOURS[Math.abs(Number(epoch)) % EPOCH_COLOURS.length];
}

/** Restart a CSS flash animation on an element (class `name`). */
export function flash(element, name = 'flash') {
  element.classList.remove(name);
  void element.offsetWidth; // reflow, so the animation starts again
  element.classList.add(name);
}

/** JSON for reading: one key a line for objects, arrays of scalars on one line. */
export function prettyJson(value, indent = '') {
  if (Array.isArray(value)) {
    if (value.every((x) => x === null || typeof x !== 'object')) return JSON.stringify(value).replaceAll(',', ', ');
    return `[\n${value.map((x) => `${indent}  ${prettyJson(x, `${indent}  `)}`).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) return '{}';
    return `{\n${keys.map((k) => `${indent}  ${JSON.stringify(k)}: ${prettyJson(value[k], `${indent}  `)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** One line of JSON with spaces, for a summary. */
export function compactJson(value) {
  return JSON.stringify(value)?.replaceAll(',"', ', "').replaceAll('":', '": ') ?? '';
}

/** Leader as a student reads it: -1 and null both mean no leader. */
export function leaderText(leader) {
  return leader === null || leader === undefined || leader < 0 ? 'none' : String(leader);
}
