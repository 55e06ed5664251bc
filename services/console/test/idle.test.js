// The idle checkers in words (src/idle.js): `make console-unit`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idleSummary } from '../src/idle.js';

const check = (remaining, extra) => ({ remaining, remaining_time_type: 'expire_after', extra });

test('the time left before idle reclamation, in seconds, minutes or hours', () => {
  assert.equal(idleSummary({ network_timeout: check(42.7, { timeout: 600 }) }).idle, 'reclaimed in 42 s unless used');
  assert.equal(idleSummary({ network_timeout: check(725, { timeout: 3600 }) }).idle, 'reclaimed in 12 min unless used');
  assert.equal(
    idleSummary({ network_timeout: check(7500, { timeout: 9000 }) }).idle,
    'reclaimed in 2 h 5 min unless used',
  );
  assert.equal(idleSummary({ network_timeout: check(725, { timeout: 3600 }) }).idleTimeout, 3600);
});

test('which setting gave the idle timeout', () => {
  const s = idleSummary({ network_timeout: check(30, { timeout: 60, level: 'resource_group' }) });
  assert.equal(s.idleLevel, 'resource group');
  assert.equal(idleSummary({ network_timeout: check(30, { timeout: 60 }) }).idleLevel, null);
});

test('due is zero, never negative', () => {
  assert.equal(idleSummary({ network_timeout: check(-3, { timeout: 60 }) }).idle, 'reclaimed in 0 s unless used');
});

test('a checker that does not apply says nothing', () => {
  const none = { idle: null, idleTimeout: null, idleLevel: null, lifetime: null };
  assert.deepEqual(idleSummary(undefined), none);
  assert.deepEqual(idleSummary({}), none);
  assert.deepEqual(idleSummary({ network_timeout: check(null, null), session_lifetime: check(null, null) }), none);
});

test('the session lifetime', () => {
  const s = idleSummary({ network_timeout: check(null, null), session_lifetime: check(3600, { max_lifetime: 7200 }) });
  assert.equal(s.lifetime, 'ends in 60 min');
  assert.equal(s.idle, null);
});

test('idle timeout fields: whole seconds; -1 only for a keypair policy', async () => {
  const { idleTimeoutFromForm } = await import('../src/limits_form.js');
  assert.equal(idleTimeoutFromForm(' 600 '), 600);
  assert.equal(idleTimeoutFromForm(''), 0);
  assert.equal(idleTimeoutFromForm('-1', { allowUndefined: true }), -1);
  assert.throws(() => idleTimeoutFromForm('-1'), /Idle timeout: “-1”/);
  assert.throws(() => idleTimeoutFromForm('1.5'), /whole number/);
  assert.throws(() => idleTimeoutFromForm('ten'), /whole number/);
});
