// The instructor's hand-out progress, in words (static/js/views/handout.js).
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {handoutText} from '../../static/js/views/handout.js';

const refusal = {student: 's-1', name: 'Ann', error: 'this server runs 40 sandboxes, as many as it holds'};

test('a running hand-out says built, failed and what is left', () => {
  assert.equal(handoutText({status: 'running', total: 60, built: 12, failed: [refusal], remaining: 47}),
    'Handing out private copies: 12 of 60 built, 1 failed, 47 to go.');
});

test('a finished hand-out says who got a copy and points at the reasons of the rest', () => {
  assert.equal(handoutText({status: 'done', total: 3, built: 2, failed: [refusal], remaining: 0}),
    'Hand-out finished: 2 of 3 students got a private copy; 1 did not (reasons below).');
  assert.equal(handoutText({status: 'done', total: 1, built: 1, failed: [], remaining: 0}),
    'Hand-out finished: 1 of 1 student got a private copy.');
  assert.equal(handoutText(null), '');
});
