// A session's idle checkers (GET /session/{name}'s idleChecks, Backend.AI's
// idle_checks; docs/api.md "Idle") in words, for the sessions list and the
// session page: { idle: "reclaimed in 12 min unless used", idleTimeout: 600,
// idleLevel: "project" (the setting that gave the timeout: keypair policy,
// resource group, project or domain), lifetime: "ends in 2 h 5 min" }, each
// null when that checker does not apply.

function secondsInWords(s) {
  if (s < 120) return `${Math.floor(s)} s`;
  if (s < 7200) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function remaining(check) {
  return check && typeof check.remaining === 'number' ? Math.max(0, check.remaining) : null;
}

export function idleSummary(checks) {
  const net = remaining(checks && checks.network_timeout);
  const life = remaining(checks && checks.session_lifetime);
  const extra = net === null ? null : checks.network_timeout.extra;
  return {
    idle: net === null ? null : `reclaimed in ${secondsInWords(net)} unless used`,
    idleTimeout: extra && typeof extra.timeout === 'number' ? extra.timeout : null,
    idleLevel: extra && typeof extra.level === 'string' ? extra.level.replace('_', ' ') : null,
    lifetime: life === null ? null : `ends in ${secondsInWords(life)}`,
  };
}
