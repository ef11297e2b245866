// Counting words the way every page says them (static/js/words.js).
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {plural} from '../../static/js/words.js';

test('one thing is singular; none and many are plural', () => {
  assert.equal(plural(1, 'student'), '1 student');
  assert.equal(plural(0, 'student'), '0 students');
  assert.equal(plural(200, 'student'), '200 students');
});

test('a word that does not just take an s says its own plural', () => {
  assert.equal(plural(2, 'analysis', 'analyses'), '2 analyses');
  assert.equal(plural(1, 'analysis', 'analyses'), '1 analysis');
});
