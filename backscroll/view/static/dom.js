// Small helpers to build elements: text is always set as text, never parsed as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// An app's colour: the same app has the same colour on every page and every day.
export function colour(app) {
  let hash = 0;
  for (const ch of app) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 55%)`;
}

export const clock = (iso) => iso.slice(11, 19);
export const day = (iso) => iso.slice(0, 10);

// A snippet's [matched words] marked. The snippet brackets what matched, but a screen's own
// text holds brackets too ("[as oncomplete]"): only a bracketed piece that is one of the
// query's words or phrases (a prefix's word, or one letter off for a fuzzy match) is marked,
// and [REDACTED:kind] is shown as what redaction replaced.
export function marked(text, query = "", fuzzy = false) {
  const terms = queryTerms(query);
  const out = [];
  let at = 0;
  for (const found of text.matchAll(/\[([^\[\]\n]{1,200})\]/g)) {
    const inner = found[1];
    let piece = null;
    if (inner.startsWith("REDACTED:")) piece = el("span", { class: "redacted", title: "replaced by redaction", text: inner });
    else if (matches(inner.toLowerCase(), terms, fuzzy)) piece = el("mark", { text: inner });
    if (piece === null) continue;
    out.push(text.slice(at, found.index), piece);
    at = found.index + found[0].length;
  }
  out.push(text.slice(at));
  return out;
}

function queryTerms(query) {
  const terms = [];
  for (const found of query.toLowerCase().matchAll(/"([^"]*)"|(\S+)/g)) {
    const term = (found[1] ?? found[2]).trim();
    if (term) terms.push(term);
  }
  return terms;
}

function matches(piece, terms, fuzzy) {
  return terms.some((term) =>
    term.endsWith("*") ? piece.startsWith(term.slice(0, -1)) : piece === term || (fuzzy && oneEdit(piece, term)));
}

// Whether a and b differ by one letter replaced, added or dropped, or two swapped.
function oneEdit(a, b) {
  if (Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i += 1;
  if (a.length === b.length) {
    return a.slice(i + 1) === b.slice(i + 1) || (a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2));
  }
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

// A frame's full text, with what redaction replaced shown (nothing else is marked).
export function redactedText(text) {
  const out = [];
  let at = 0;
  for (const found of text.matchAll(/\[REDACTED:([a-z_]+)\]/g)) {
    out.push(text.slice(at, found.index));
    out.push(el("span", { class: "redacted", title: "replaced by redaction", text: `[REDACTED:${found[1]}]` }));
    at = found.index + found[0].length;
  }
  out.push(text.slice(at));
  return out;
}
