// Offset paging (src/paging.js), as the agents page uses it: `make console-unit`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pageOf } from '../src/paging.js';

test('a page in the middle of 10,000 agents: its rows and both neighbours', () => {
  const p = pageOf(100, 100, 10000, 'agents');
  assert.equal(p.label, 'agents 101–200 of 10,000');
  assert.equal(p.prev, 0);
  assert.equal(p.next, 200);
});

test('the first and the last page have one neighbour each', () => {
  assert.equal(pageOf(0, 100, 250).prev, null);
  assert.equal(pageOf(0, 100, 250).next, 100);
  const last = pageOf(200, 100, 250, 'agents');
  assert.equal(last.label, 'agents 201–250 of 250');
  assert.equal(last.next, null);
  assert.equal(last.prev, 100);
});

test('an offset past the end (agents went away) is pulled back to the last page', () => {
  const p = pageOf(900, 100, 250);
  assert.equal(p.offset, 200);
  assert.equal(p.next, null);
});

test('nothing to show, and bad input, never a NaN', () => {
  assert.deepEqual(pageOf(0, 100, 0, 'agents'), { offset: 0, label: 'no agents', prev: null, next: null });
  const p = pageOf('x', 0, undefined);
  assert.equal(p.label, 'no items');
  assert.equal(p.offset, 0);
});
