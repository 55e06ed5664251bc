// Offset paging of a list the API pages (?limit=&offset=, answered with
// `total`): what a page shows and where its neighbours start.

// The page at offset of size rows, out of total: its label ("agents 101–200
// of 10,000"), the previous and next pages' offsets (null: none).
export function pageOf(offset, size, total, noun = 'items') {
  const t = Math.max(0, Number(total) || 0);
  const n = Math.max(1, Number(size) || 1);
  const o = Math.min(Math.max(0, Number(offset) || 0), t ? Math.floor((t - 1) / n) * n : 0);
  const fmt = (v) => v.toLocaleString('en-US');
  return {
    offset: o,
    label: t ? `${noun} ${fmt(o + 1)}–${fmt(Math.min(o + n, t))} of ${fmt(t)}` : `no ${noun}`,
    prev: o > 0 ? Math.max(0, o - n) : null,
    next: o + n < t ? o + n : null,
  };
}
